"""Column names of the tables Flight Deck builds; refer to columns by these names.

The entries table has one row per (rank, FR entry); the stacks table one row per
distinct call stack (entries refer to it by ``STACK_ID``); the groups table one row
per process group; the status table one row per (rank, pg_status record).
"""

from __future__ import annotations

import pyarrow as pa

# entries
RANK = "rank"
ENTRY_INDEX = "entry_index"
RECORD_ID = "record_id"
PG_ID = "pg_id"
PG_NAME = "pg_name"
PG_DESC = "pg_desc"
PG_KEY = "pg_key"
SEQ = "collective_seq_id"
P2P_SEQ = "p2p_seq_id"
IS_P2P = "is_p2p"
PROFILING_NAME = "profiling_name"
OP = "op"
PEER_SRC = "p2p_src"  # derived from PROFILING_NAME (opnames.peer_ranks), not stored per row
PEER_DST = "p2p_dst"
INPUT_SIZES = "input_sizes"
OUTPUT_SIZES = "output_sizes"
INPUT_DTYPES = "input_dtypes"
STATE = "state"
RETIRED = "retired"
T_CREATED = "time_created_ns"
STACK_ID = "stack_id"
CALL_SITE = "call_site"

_dict_str = pa.dictionary(pa.int32(), pa.string())

ENTRY_SCHEMA = pa.schema(
    [
        (RANK, pa.int32()),
        (ENTRY_INDEX, pa.int32()),
        (RECORD_ID, pa.int64()),
        (PG_ID, pa.int32()),
        (PG_NAME, _dict_str),
        (PG_DESC, _dict_str),
        (SEQ, pa.int64()),
        (P2P_SEQ, pa.int64()),
        (IS_P2P, pa.bool_()),
        (PROFILING_NAME, _dict_str),
        (OP, _dict_str),
        (INPUT_SIZES, _dict_str),
        (OUTPUT_SIZES, _dict_str),
        (INPUT_DTYPES, _dict_str),
        (STATE, _dict_str),
        (RETIRED, pa.bool_()),
        (T_CREATED, pa.int64()),
        (STACK_ID, pa.int64()),
        (CALL_SITE, _dict_str),
    ]
)

# stacks
FRAMES = "frames"  # the stack as text, one "file:line in name" per line, innermost first
NUM_FRAMES = "num_frames"
STACK_SCHEMA = pa.schema(
    [(STACK_ID, pa.int64()), (NUM_FRAMES, pa.int32()), (FRAMES, pa.string()), (CALL_SITE, pa.string())]
)

# pg_config as each rank saw it. Per file RANKS is the group's rank list as written; in the
# combined table it is dictionary-encoded: every member repeats the default group's list.
RANKS = "ranks"
CONFIG_SCHEMA = pa.schema([(RANK, pa.int32()), (PG_NAME, pa.string()), (PG_DESC, pa.string()), (RANKS, pa.string())])

# pg_status as each rank saw it (pg_id is process-local; PG_NAME is resolved later)
LAST_ENQUEUED = "last_enqueued"
LAST_STARTED = "last_started"
LAST_COMPLETED = "last_completed"
STATUS_SCHEMA = pa.schema(
    [
        (RANK, pa.int32()),
        (PG_ID, pa.string()),
        (LAST_ENQUEUED, pa.int64()),
        (LAST_STARTED, pa.int64()),
        (LAST_COMPLETED, pa.int64()),
    ]
)

# one row per loaded file
FILE = "file"
VERSION = "version"
COMM_LIB_VERSION = "comm_lib_version"
NUM_ENTRIES = "num_entries"
FORMAT = "format"
# node health checks NVIDIA's trace collector adds (``health_check_results``); null without them
GPU_HEALTH = "gpu_health"
GPU_HEALTH_OUTPUT = "gpu_health_output"
NIC_HEALTH = "nic_health"
NIC_HEALTH_OUTPUT = "nic_health_output"
HEALTH_COLUMNS = (GPU_HEALTH, GPU_HEALTH_OUTPUT, NIC_HEALTH, NIC_HEALTH_OUTPUT)
RANK_SCHEMA = pa.schema(
    [
        (RANK, pa.int32()),
        (FILE, pa.string()),
        (FORMAT, pa.string()),
        (VERSION, pa.string()),
        (COMM_LIB_VERSION, pa.string()),
        (NUM_ENTRIES, pa.int64()),
        *((name, pa.string()) for name in HEALTH_COLUMNS),
    ]
)

#: Entry states, from least to most progressed.
STATES = ("scheduled", "started", "completed")
