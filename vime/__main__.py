from vime.cli import main

raise SystemExit(main())
