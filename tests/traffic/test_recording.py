"""NB-11: a recording reads from any of its three forms into one checked type, and a file that
cannot be used is refused naming the file, the column and the rows."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.runner import run_scenario
from harness.scenarios import parse_scenario
from harness.traffic.recording import (
    COLUMNS,
    METADATA_KEY,
    RecordingError,
    load_recording,
    read_recording,
    recording_from_frame,
)

pytestmark = pytest.mark.req("NB-11")


def _run_tables(tmp_path: Path) -> Path:
    scenario = parse_scenario(
        {
            "seed": 5,
            "duration": "30m",
            "config": {"scheduler": {"workers": 2}},
            "limits": {"concurrency": "off", "rate": "off"},
            "organizations": [{"name": "Acme", "plan": "pro"}, {"name": "Bistro"}],
            "arrivals": [{"kind": "poisson", "rate_per_hour": 60}],
            "sessions": {"quality": {"pro": 1, "lite": 1}, "surface": {"api": 2, "embed": 1}},
        }
    )
    run_scenario(scenario).write_parquet(tmp_path / "tables")
    return tmp_path / "tables" / "sessions.parquet"


def test_a_runs_own_sessions_table_is_a_recording(tmp_path: Path) -> None:
    path = _run_tables(tmp_path)
    sessions = pd.read_parquet(path)
    recording = read_recording(path)
    frame = recording.frame
    assert list(frame.columns) == list(COLUMNS)
    assert len(recording) == len(sessions) > 10
    by_id = sessions.set_index("session_id").loc[frame["session_id"]]
    # The client's plan is the length, known for the sessions that never ran too.
    assert frame["length_seconds"].tolist() == by_id["planned_length"].tolist()
    assert frame["quality"].astype(str).tolist() == by_id["quality"].astype(str).tolist()
    assert frame["surface"].astype(str).tolist() == by_id["surface"].astype(str).tolist()
    assert set(frame["surface"].astype(str)) == {"api", "embed"}
    assert frame["organization"].tolist() == by_id["organization"].astype(str).tolist()
    assert recording.start == sessions["created_at"].min()
    expected = (by_id["created_at"] - sessions["created_at"].min()).dt.total_seconds()
    assert frame["offset_seconds"].tolist() == pytest.approx(expected.tolist(), abs=1e-6)
    assert frame["offset_seconds"].is_monotonic_increasing


def test_a_hand_written_csv_needs_only_the_creation_times(tmp_path: Path) -> None:
    path = tmp_path / "day.csv"
    path.write_text(
        "created_at,organization\n"
        "2026-03-02T09:00:30Z,Acme\n"
        "2026-03-02T09:00:00+00:00,\n"
        "2026-03-02 10:00:00,Acme\n",  # no offset: UTC
        encoding="utf-8",
    )
    recording = read_recording(path)
    frame = recording.frame
    assert frame["offset_seconds"].tolist() == [0.0, 30.0, 3600.0]
    assert recording.start == pd.Timestamp("2026-03-02T09:00:00Z")
    assert frame["organization"].isna().tolist() == [True, False, False]
    assert frame["session_id"].tolist() == ["row-2", "row-1", "row-3"]
    assert set(frame["quality"].astype(str)) == {"standard"}
    assert set(frame["surface"].astype(str)) == {"api"}
    assert frame["length_seconds"].isna().all()  # never said: drawn by the scenario


def test_a_csv_in_offsets_with_lengths_and_mixes(tmp_path: Path) -> None:
    path = tmp_path / "offsets.csv"
    path.write_text(
        "offset_seconds,length_seconds,quality,surface\n120,60,pro,embed\n0,30.5,mock,api\n",
        encoding="utf-8",
    )
    recording = read_recording(path)
    assert recording.start is None
    assert recording.frame["offset_seconds"].tolist() == [0.0, 120.0]
    assert recording.frame["length_seconds"].tolist() == [30.5, 60.0]
    assert recording.frame["quality"].astype(str).tolist() == ["mock", "pro"]
    assert recording.span == 120.0


def test_a_captured_length_is_the_billable_time_of_a_session_that_ran(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "session_id": ["s1", "s2"],
            "created_at": pd.to_datetime(["2026-01-01T00:10:00Z", "2026-01-01T00:20:00Z"]),
            "first_frame_at": pd.to_datetime(["2026-01-01T00:10:03Z", None], utc=True),
            "status": ["ended", "failed"],
            "billable_seconds": [61.0, 0.0],
        }
    )
    table = pa.Table.from_pandas(frame, preserve_index=False)
    start = json.dumps({"start": "2026-01-01T00:00:00+00:00", "target": "x"}).encode()
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: start}), tmp_path / "c.parquet")
    recording = read_recording(tmp_path / "c.parquet")
    assert recording.start == pd.Timestamp("2026-01-01T00:00:00Z")  # the capture's --since
    assert recording.info == {"target": "x"}
    assert recording.frame["offset_seconds"].tolist() == [600.0, 1200.0]
    lengths = recording.frame["length_seconds"].tolist()
    assert lengths[0] == 61.0 and math.isnan(lengths[1])


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_written_recordings_read_back_the_same(tmp_path: Path, suffix: str) -> None:
    recording = read_recording(_run_tables(tmp_path))
    again = read_recording(recording.write(tmp_path / f"copy{suffix}"))
    pd.testing.assert_frame_equal(again.frame, recording.frame, check_categorical=False)
    assert again.start == recording.start


def test_since_cuts_the_head_and_counts_from_there(tmp_path: Path) -> None:
    recording = read_recording(_run_tables(tmp_path))
    cut = recording.start + pd.Timedelta(minutes=10)
    later = recording.since(cut)
    kept = recording.frame[recording.frame["offset_seconds"] >= 600]
    assert later.frame["session_id"].tolist() == kept["session_id"].tolist()
    assert later.frame["offset_seconds"].tolist() == pytest.approx(
        (kept["offset_seconds"] - 600).tolist()
    )
    assert later.start == cut


def test_every_problem_names_the_file_the_column_and_the_lines(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(
        "created_at,quality,surface,billable_seconds,status\n"
        "2026-01-01T00:00:00Z,pro,api,10,ended\n"
        "yesterday,ultra,api,-2,ended\n"
        ",standard,fax,x,finished\n",
        encoding="utf-8",
    )
    with pytest.raises(RecordingError) as info:
        read_recording(path)
    text = str(info.value)
    assert text.splitlines()[0] == f"{path}: not a usable recording (7 problems)"
    for expected in (
        "column created_at: not an ISO-8601 instant such as 2026-01-05T09:30:00Z (line 3; "
        "e.g. 'yesterday')",
        "column created_at: a value is required (line 4)",
        "column quality: must be one of mock, lite, standard, pro (line 3; e.g. 'ultra')",
        "column surface: must be one of api, playground, embed, share, public_demo, pipecat, "
        "agora, video_generation (line 4; e.g. 'fax')",
        "column billable_seconds: cannot be negative (line 3; e.g. '-2')",
        "column billable_seconds: not a number of seconds (line 4; e.g. 'x')",
        "column status: must be one of created, queued, starting, running, ending, ended, "
        "failed, canceled (line 4; e.g. 'finished')",
    ):
        assert f"  {path}: {expected}" in text.splitlines()


def test_a_parquet_problem_names_its_rows(tmp_path: Path) -> None:
    frame = pd.DataFrame({"offset_seconds": [0.0, math.inf, -1.0, -2.0, -3.0, -4.0]})
    frame.to_parquet(tmp_path / "r.parquet")
    with pytest.raises(RecordingError) as info:
        read_recording(tmp_path / "r.parquet")
    assert info.value.problems == (
        "column offset_seconds: must be finite (row 2; e.g. inf)",
        "column offset_seconds: cannot be negative (rows 3, 4, 5 (and 1 more); e.g. -1.0)",
    )


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("missing.csv", None, "no such file"),
        ("empty.parquet", b"not parquet", "cannot be read"),
        ("notime.csv", b"quality\npro\n", "no column created_at (an instant) or offset_seconds"),
    ],
)
def test_unusable_files_are_refused(
    tmp_path: Path, name: str, content: bytes | None, problem: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(RecordingError) as info:
        read_recording(path)
    assert info.value.source == str(path)
    assert info.value.problems[0].startswith(problem)


def test_a_frame_of_any_form_reads_without_a_file() -> None:
    recording = recording_from_frame(pd.DataFrame({"offset_seconds": [5, 1]}), "<mine>")
    assert recording.frame["offset_seconds"].tolist() == [1.0, 5.0]
    with pytest.raises(RecordingError, match="<mine>: column offset_seconds"):
        recording_from_frame(pd.DataFrame({"offset_seconds": ["soon"]}), "<mine>")


def test_a_loaded_recording_is_read_again_once_its_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("offset_seconds\n1\n", encoding="utf-8")
    first = load_recording(path)
    assert load_recording(path) is first
    path.write_text("offset_seconds\n1\n2\n", encoding="utf-8")
    os.utime(path, ns=(1, 1))  # a different modification time, whatever the clock's grain
    assert len(load_recording(path)) == 2
