import sys

from logwatch.cli import main

sys.exit(main())
