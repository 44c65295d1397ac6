import os
import sys

if __name__ == "__main__":  # a worker process started by spawn or forkserver imports this too
    from .tables.worker_start import start_server_early

    start_server_early()  # the workers' server imports the reader while this process does too
    from .cli import main

    try:
        sys.exit(main())
    except BrokenPipeError:  # the reader went away (``| head``): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
