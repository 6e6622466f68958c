"""``python -m dcnsim`` runs the command-line interface (same as the ``dcnsim`` script)."""

from dcnsim.cli import main

if __name__ == "__main__":  # guarded: spawned sweep workers import this module too
    raise SystemExit(main())
