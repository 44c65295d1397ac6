import os
import sys

from .cli import main

if __name__ == "__main__":  # a worker process started by spawn or forkserver imports this too
    try:
        sys.exit(main())
    except BrokenPipeError:  # the reader went away (``| head``): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
