"""``python -m linbench``: the same command line as the ``linbench`` script."""

from linbench.cli import main

if __name__ == "__main__":
    main()
