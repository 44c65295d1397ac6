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


def test_inner_steps_of_a_helper_are_not_call_sites() -> None:
    """``wrapper`` -> ``_collective`` -> ``_issue`` -> ``comm.all_reduce`` -> the caller: the
    frames under ``_issue`` have one caller each, yet every collective passes through them."""
    import pandas as pd

    from analysis import schema as s
    from analysis.model.callsites import job_call_sites

    def stack(*outer: str) -> str:
        inner = ["/w/launch.py:82 in _collective", "/w/launch.py:244 in _issue"]
        return "\n".join(["/t/torch/distributed/c10d.py:3245 in all_reduce", *inner, *outer])

    stacks = pd.DataFrame(
        {
            s.STACK_ID: [0, 1, 2],
            s.FRAMES: [
                stack("/w/launch.py:167 in all_reduce", "/w/launch.py:327 in get_grad_norm_fp32"),
                stack("/w/launch.py:167 in all_reduce", "/w/launch.py:349 in log_debug_metric"),
                stack("/w/launch.py:200 in barrier", "/w/launch.py:343 in save_checkpoint"),
            ],
        }
    )
    sites = job_call_sites(stacks)
    assert sites == {
        0: "/w/launch.py:327 in get_grad_norm_fp32",
        1: "/w/launch.py:349 in log_debug_metric",
        2: "/w/launch.py:200 in barrier",
    }
