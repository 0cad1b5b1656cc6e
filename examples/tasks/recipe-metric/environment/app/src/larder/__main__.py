import sys

from larder.cli import main

sys.exit(main())
