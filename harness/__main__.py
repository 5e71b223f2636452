import sys

from harness.run.stopping import exit_status, stop_on_signals  # first: it imports nothing heavy

if __name__ == "__main__":
    with stop_on_signals():  # before the imports, which can take long on a busy machine: an interrupt there stops too
        try:
            from harness.cli import main
        except KeyboardInterrupt as exc:
            print("\ninterrupted before the command started; nothing was run", file=sys.stderr)
            sys.exit(exit_status(exc))
        sys.exit(main())
