"""The dashboard's plain modules: where dumps come from, which paths it may read, uploads,
the page state and its URL, the command-line options."""

from __future__ import annotations

from pathlib import Path

from analysis.ingest.discover import discover
from dashboard import args as dash_args
from dashboard import confine, sources, state, tables
from dashboard.components.text import md_escape


def test_state_query_round_trip():
    ss: dict = {}
    state.hydrate(ss, {"scenario": "x", "pg": "7", "rank": "3", "seq": "12", "window": "0:4:10:20"})
    assert ss[state.CELL] == (3, 12) and ss[state.WINDOW] == state.Window("7", 0, 4, 10, 20)
    params: dict = {"stale": "1", "rank": "9"}
    state.write_query(params, ss)
    assert params == {"stale": "1", "scenario": "x", "pg": "7", "rank": "3", "seq": "12", "window": "0:4:10:20"}
    state.on_dataset(ss, "a")
    assert ss[state.CELL] == (3, 12)
    state.on_dataset(ss, "b")
    assert state.CELL not in ss and state.PG not in ss


def test_upload_names_are_sanitised(tmp_path):
    written = sources.write_uploads(tmp_path, [("../../etc/rank_0", b"a"), ("..", b"b"), ("dir\\rank_1", b"c")])
    assert written == ["rank_0", "upload", "rank_1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank_0", "rank_1", "upload"]


def test_md_escape_neutralises_markup():
    assert md_escape("[x](javascript:1) **b** :red[c]") == r"\[x\]\(javascript\:1\) \*\*b\*\* \:red\[c\]"


def test_args_and_fingerprint(tmp_path):
    assert dash_args.parse_args(["--dumps", "/d 1", "--other"]).dumps == "/d 1"
    (tmp_path / "rank_0").write_bytes(b"x")
    before = sources.fingerprint(str(tmp_path))
    (tmp_path / "rank_1").write_bytes(b"y")
    assert sources.fingerprint(str(tmp_path)) != before
    assert tables.compact_ranks([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"


def test_confine_allows_only_paths_under_roots(tmp_path):
    root = tmp_path / "root"
    (root / "job").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "out_link").symlink_to(tmp_path / "outside")
    (root / "in_link").symlink_to(root / "job")
    roots = confine.resolve_roots([root])
    real = str(root.resolve())
    assert confine.confine(str(root / "job"), roots) == f"{real}/job"
    assert confine.confine(str(root), roots) == real
    assert confine.confine(str(root / "in_link"), roots) == f"{real}/job"
    assert confine.confine(str(root / "job" / "rank_*"), roots) == f"{real}/job/rank_*"
    assert confine.confine(str(root / "not-yet"), roots) == f"{real}/not-yet"
    for bad in (
        "/etc/passwd",
        "/proc/self/environ",
        "/etc/no-such-file",
        str(root / ".." / "outside"),
        str(root / "job" / ".." / ".." / "outside"),
        str(root / "out_link"),
        str(root / "out_link" / "rank_0"),
        str(root / "*" / ".." / ".."),
        str(tmp_path / "root2"),  # shares a prefix with the root, is not under it
        "",
        "rank\0_0",
    ):
        assert confine.confine(bad, roots) is None, bad
    assert confine.is_within("/a/b", "/a") and not confine.is_within("/ab", "/a") and confine.is_within("/a", "/a")


def test_split_files_refuses_symlinks_out_of_the_root(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    secret = tmp_path / "secret"
    secret.write_text("TOKEN=hunter2")
    (root / "rank_0").write_bytes(b"x")
    (root / "rank_1").symlink_to(root / "rank_0")
    (root / "rank_2").symlink_to(secret)
    (root / "rank_3").symlink_to("/etc/passwd")
    files, _ = discover(root)
    ok, refused = confine.split_files(files, confine.resolve_roots([root]))
    assert [f.rank for f in ok] == [0, 1]
    assert sorted(Path(e.file).name for e in refused) == ["rank_2", "rank_3"]
    assert all(e.error == confine.FILE_REFUSED for e in refused)


def test_roots_from_arguments(tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    args = dash_args.parse_args(["--dumps", str(job), "--dumps-root", str(tmp_path / "a"), "--dumps-root", "/srv"])
    assert args.roots() == (
        str((tmp_path / "a").resolve()),
        "/srv",
        str(dash_args.SAMPLE_ROOT.resolve()),
        str(job.resolve()),
    )
    prefix = dash_args.parse_args(["--dumps", str(job / "_dump_")]).roots()
    assert str(job.resolve()) in prefix
    assert str(job.resolve()) in dash_args.parse_args(["--dumps", str(job / "*" / "rank_*")]).roots()
    assert dash_args.parse_args([]).roots() == (str(dash_args.SAMPLE_ROOT.resolve()),)


def test_upload_checks_names_sizes_and_totals():
    check = sources.check_uploads(
        [
            ("rank_0", 10),
            ("../../etc/rank_1", 10),
            ("C:\\dumps\\_dump_2.pkl", 10),
            (".bashrc", 10),
            ("..", 1),
            ("notes.txt", 1),
            ("rank_0", 5),
            ("rank_5", 3 << 20),
        ],
        max_file_mb=2,
        max_total_mb=10,
    )
    assert check.accepted == [(0, "rank_0"), (1, "rank_1"), (2, "_dump_2.pkl")]
    assert [name for name, _ in check.refused] == [".bashrc", "..", "notes.txt", "rank_0", "rank_5"]
    assert "larger than 2 MB" in check.refused[-1][1]
    big = sources.check_uploads([("rank_0", 6 << 20), ("rank_1", 6 << 20)], max_file_mb=8, max_total_mb=10)
    assert big.too_big and not big.accepted
    assert sources.upload_name("<img src=x onerror=alert(1)>_rank_1") == "_img_src_x_onerror_alert_1__rank_1"


def test_upload_folder_is_private_and_removed(tmp_path):
    import gc
    import os
    import stat
    import time

    folder = sources.UploadFolder(parent=str(tmp_path))
    path = Path(folder.path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o700 and path.name.startswith(sources.UPLOAD_PREFIX)
    sources.write_uploads(path, [("rank_0", b"\x80\x02N.")])
    mode = stat.S_IMODE((path / "rank_0").stat().st_mode)
    assert mode == 0o600, oct(mode)  # never executable, never readable by others
    (path / "rank_1").symlink_to(tmp_path / "elsewhere")
    sources.write_uploads(path, [("rank_1", b"x")])  # a planted symlink is replaced, not written through
    assert not (tmp_path / "elsewhere").exists() and (path / "rank_1").read_bytes() == b"x"
    del folder
    gc.collect()
    assert not path.exists(), "dropping the object (the session) deletes the folder"

    old = Path(sources.UploadFolder(parent=str(tmp_path)).path)  # already gone: object not kept
    stale = tmp_path / f"{sources.UPLOAD_PREFIX}stale"
    fresh = tmp_path / f"{sources.UPLOAD_PREFIX}fresh"
    other = tmp_path / "unrelated"
    for d in (stale, fresh, other):
        d.mkdir()
    past = time.time() - 48 * 3600
    os.utime(stale, (past, past))
    os.utime(other, (past, past))
    assert sources.sweep_stale_uploads(str(tmp_path)) == [str(stale)]
    assert fresh.exists() and other.exists() and not old.exists()


def test_orphan_upload_folders_are_removed(tmp_path):
    """The janitor deletes the folders of sessions Streamlit no longer holds, keeps the others."""
    held = {"live", "gone"}
    current = ["live"]
    janitor = sources.UploadJanitor(
        sessions=lambda: (current[0], lambda sid: sid in held), min_interval_s=0, parent=str(tmp_path)
    )
    live = janitor.folder(None)
    assert janitor.folder(live) is live, "a live folder is kept for its tab"
    current[0] = "gone"
    gone = janitor.folder(None)
    assert janitor.tidy() == []
    held.discard("gone")  # the tab closed and its session expired
    assert janitor.tidy() == [gone.path]
    assert Path(live.path).is_dir() and not Path(gone.path).exists()
    assert janitor.folder(gone) is not gone, "a removed folder is replaced, not reused"


def test_janitor_waits_between_tidy_runs(tmp_path):
    held: set[str] = {"a"}
    janitor = sources.UploadJanitor(
        sessions=lambda: ("a", held.__contains__), min_interval_s=3600, parent=str(tmp_path)
    )
    folder = janitor.folder(None)
    assert janitor.tidy() == []
    held.clear()
    assert janitor.tidy() == [], "a second run within the interval does nothing"
    assert Path(folder.path).is_dir()


def test_janitor_without_a_streamlit_runtime_keeps_every_folder(tmp_path):
    """Outside a server (no script-run context) no session is known to be gone."""
    session_id, held = sources._streamlit_sessions()
    assert session_id is None and held("any-id")


def _session_keys_written_as_text() -> list[str]:
    """``key="..."`` arguments and ``ss["..."]``/``ss.get("...")`` uses anywhere in the dashboard."""
    import ast

    from locations import ROOT

    found = []
    for path in sorted((ROOT / "dashboard").rglob("*.py")):
        if path.name == "state.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            literal = None
            if isinstance(node, ast.Call):
                literal = next((k.value for k in node.keywords if k.arg == "key"), None)
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr in ("get", "pop", "setdefault") and node.args:
                    owner = ast.unparse(func.value)
                    if owner in ("ss", "st.session_state", "state") and isinstance(node.args[0], ast.Constant):
                        literal = node.args[0]
            elif isinstance(node, ast.Subscript) and ast.unparse(node.value) in ("ss", "st.session_state"):
                literal = node.slice
            if isinstance(literal, ast.Constant) and isinstance(literal.value, str):
                found.append(f"{path.name}:{node.lineno}: {literal.value!r}")
    return found


def test_every_session_state_key_is_declared_in_state() -> None:
    assert _session_keys_written_as_text() == []
    keys = [v for k, v in vars(state).items() if k.isupper() and isinstance(v, str) and not k.startswith("SOURCE_")]
    assert len(keys) == len(set(keys)), "two names for one key"


def test_another_group_or_dump_set_forgets_the_selection() -> None:
    ss: dict = {}
    state.on_group(ss, "1")
    state.set_cell(ss, 3, 7)
    state.set_window(ss, state.Window("1", 0, 4, 0, 9))
    ss[state.LAST_EVENT] = {"chart": "x"}
    state.on_group(ss, "1")
    assert state.get_cell(ss) == (3, 7), "the same group keeps its selection"
    state.on_group(ss, "2")
    assert all(k not in ss for k in state.SELECTION)
    state.set_cell(ss, 1, 1)
    ss[state.PG] = "2"
    state.on_dataset(ss, "a")
    state.on_dataset(ss, "b")
    assert all(k not in ss for k in (*state.SELECTION, state.PG))
    assert state.heatmap_key("2", None) != state.heatmap_key("2", state.Window("2", 0, 1, 0, 1))
