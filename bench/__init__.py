"""Speed and memory goals, reported as ratios against baselines measured in the same run.

Each ``bench_*.py`` module exposes ``run(scale: float) -> dict``. Nothing here asserts on time:
machines are shared and noisy, so only ratios measured side by side mean anything.
"""
