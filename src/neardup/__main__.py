# ``python -m neardup`` starts as the ``neardup`` command does (signals, allocators' page advice).
from neardup_cli import run

if __name__ == "__main__":
    run()
