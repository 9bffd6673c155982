"""Entry point: ``python -m extender_app --help``."""

from extender_app.cli import main

raise SystemExit(main())
