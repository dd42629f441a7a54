"""`python -m gpu_platform.cli`: the `gpu-platform` command."""

from gpu_platform.cli.app import main

if __name__ == "__main__":
    main()
