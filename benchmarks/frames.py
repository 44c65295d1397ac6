"""Python call stacks attached to synthetic entries.

Real dumps symbolize each unique frame once and point every entry at the
shared frame dicts, so the pickle memo writes each frame (and its strings)
once per file. The stacks here are built once per process and reused the
same way; each has ``DEPTH`` frames, innermost first.
"""

from __future__ import annotations

DEPTH = 17

_TORCH = "/usr/local/lib/python3.12/dist-packages/torch"
_MEG = "/workspace/megatron"

_BASE = [
    ("train_step", f"{_MEG}/training/training.py", 753),
    ("train", f"{_MEG}/training/training.py", 1393),
    ("pretrain", f"{_MEG}/training/training.py", 355),
    ("<module>", f"{_MEG}/pretrain_gpt.py", 281),
]
_SCHEDULE = [
    (
        "forward_backward_pipelining_without_interleaving",
        f"{_MEG}/core/pipeline_parallel/schedules.py",
        1786,
    ),
]
_FWD_MODEL = [
    ("forward", f"{_MEG}/core/transformer/transformer_layer.py", 390),
    ("_call_impl", f"{_TORCH}/nn/modules/module.py", 1784),
    ("forward", f"{_MEG}/core/transformer/transformer_block.py", 549),
    ("forward", f"{_MEG}/core/models/gpt/gpt_model.py", 290),
    ("forward_step", f"{_MEG}/pretrain_gpt.py", 208),
    ("forward_step", f"{_MEG}/core/pipeline_parallel/schedules.py", 275),
]
_BWD_MODEL = [
    ("apply", f"{_TORCH}/autograd/function.py", 307),
    ("_engine_run_backward", f"{_TORCH}/autograd/graph.py", 829),
    ("backward", f"{_TORCH}/autograd/__init__.py", 347),
    ("backward", f"{_TORCH}/_tensor.py", 648),
    ("custom_backward", f"{_MEG}/core/pipeline_parallel/schedules.py", 160),
    ("backward_step", f"{_MEG}/core/pipeline_parallel/schedules.py", 391),
]
_INNER = {
    "ag": [
        ("all_gather_into_tensor", f"{_TORCH}/distributed/distributed_c10d.py", 3851),
        ("wrapper", f"{_TORCH}/distributed/c10d_logger.py", 81),
        ("_gather_along_first_dim", f"{_MEG}/core/tensor_parallel/mappings.py", 240),
        ("forward", f"{_MEG}/core/tensor_parallel/mappings.py", 330),
    ],
    "rs": [
        ("reduce_scatter_tensor", f"{_TORCH}/distributed/distributed_c10d.py", 4317),
        ("wrapper", f"{_TORCH}/distributed/c10d_logger.py", 81),
        (
            "_reduce_scatter_along_first_dim",
            f"{_MEG}/core/tensor_parallel/mappings.py",
            275,
        ),
        ("forward", f"{_MEG}/core/tensor_parallel/mappings.py", 352),
    ],
    "send": [
        ("isend", f"{_TORCH}/distributed/distributed_c10d.py", 2520),
        ("_p2p_ops", f"{_MEG}/core/pipeline_parallel/p2p_communication.py", 210),
        ("_communicate", f"{_MEG}/core/pipeline_parallel/p2p_communication.py", 387),
        ("send_forward", f"{_MEG}/core/pipeline_parallel/p2p_communication.py", 498),
    ],
    "recv": [
        ("irecv", f"{_TORCH}/distributed/distributed_c10d.py", 2566),
        ("_p2p_ops", f"{_MEG}/core/pipeline_parallel/p2p_communication.py", 226),
        ("_communicate", f"{_MEG}/core/pipeline_parallel/p2p_communication.py", 387),
        ("recv_forward", f"{_MEG}/core/pipeline_parallel/p2p_communication.py", 441),
    ],
    "ar": [
        ("all_reduce", f"{_TORCH}/distributed/distributed_c10d.py", 2935),
        ("wrapper", f"{_TORCH}/distributed/c10d_logger.py", 81),
        ("start_grad_sync", f"{_MEG}/core/distributed/param_and_grad_buffer.py", 442),
        (
            "register_grad_ready",
            f"{_MEG}/core/distributed/param_and_grad_buffer.py",
            513,
        ),
        ("hook", f"{_MEG}/core/distributed/distributed_data_parallel.py", 377),
    ],
    "barrier": [
        ("barrier", f"{_TORCH}/distributed/distributed_c10d.py", 4812),
        ("wrapper", f"{_TORCH}/distributed/c10d_logger.py", 81),
        ("check_adlr_autoresume_termination", f"{_MEG}/training/utils.py", 291),
    ],
}

STACK_KEYS = (
    "fwd_ag",
    "fwd_rs",
    "bwd_ag",
    "bwd_rs",
    "fwd_send",
    "fwd_recv",
    "bwd_send",
    "bwd_recv",
    "dp_ar",
    "barrier",
)

_PAD = ("_wrapped_call_impl", f"{_TORCH}/nn/modules/module.py", 1773)


def build_stacks() -> dict[str, list[dict]]:
    """One shared list of shared frame dicts per stack key."""
    cache: dict[tuple, dict] = {}

    def frame(name: str, filename: str, line: int) -> dict:
        key = (name, filename, line)
        if key not in cache:
            cache[key] = {"name": name, "filename": filename, "line": line}
        return cache[key]

    stacks: dict[str, list[dict]] = {}
    for key in STACK_KEYS:
        phase, _, what = key.partition("_")
        if key == "barrier":
            middle: list = []
            inner = _INNER["barrier"]
        elif phase == "dp":
            middle = _BWD_MODEL
            inner = _INNER["ar"]
        else:
            middle = _FWD_MODEL if phase == "fwd" else _BWD_MODEL
            inner = _INNER[what]
        raw = inner + middle + _SCHEDULE + _BASE
        while len(raw) < DEPTH:
            raw = raw[:1] + [_PAD] + raw[1:]
        stacks[key] = [frame(*f) for f in raw[:DEPTH]]
    return stacks
