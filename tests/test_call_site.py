"""The call site is where the user's Python code called the collective."""

from __future__ import annotations

from analysis.ingest.stacks import call_site

# The shape of a real torch 2.13 stack recorded with TORCH_FR_CPP_STACK=1 (C++ and
# Python frames interleaved, innermost first), shortened.
MIXED = [
    "??:0 in torch::unwind::unwind()",
    "offloadstuff.c:0 in c10d::FlightRecorder<c10::Event>::recordWithResetEnabled(...)",
    "Ops.cpp:0 in c10d::ops::(anonymous namespace)::allreduce_CPU(...)",
    "/usr/src/Python-3.11.7/Objects/methodobject.c:443 in cfunction_vectorcall_FASTCALL_KEYWORDS",
    "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py:3245 in all_reduce",
    "/usr/src/Python-3.11.7/Python/ceval.c:4769 in _PyEval_EvalFrameDefault",
    "/usr/lib/python3/site-packages/torch/distributed/c10d_logger.py:83 in wrapper",
    "/workspace/train.py:120 in sync_gradients",
    "/workspace/train.py:300 in train_step",
    "./csu/../csu/libc-start.c:360 in __libc_start_main_impl",
]


def test_mixed_cpp_and_python_stack_gives_the_python_caller() -> None:
    assert call_site(MIXED) == "/workspace/train.py:120 in sync_gradients"


def test_two_collectives_from_different_places_get_different_sites() -> None:
    other = [line.replace("120 in sync_gradients", "88 in log_debug_metric") for line in MIXED]
    assert call_site(other) != call_site(MIXED)


def test_python_only_stack() -> None:
    frames = ["/usr/lib/python3/site-packages/torch/distributed/c10d_logger.py:83 in wrapper", "/w/t.py:9 in f"]
    assert call_site(frames) == "/w/t.py:9 in f"


def test_stack_without_python_frames_falls_back_to_the_innermost_non_torch_frame() -> None:
    assert call_site(["??:0 in a()", "Ops.cpp:0 in b()"]) == "??:0 in a()"
    assert call_site([]) == ""
