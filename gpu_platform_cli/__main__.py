"""`python -m gpu_platform_cli`: the `gpu-platform` command."""

from gpu_platform_cli.app import main

if __name__ == "__main__":
    main()
