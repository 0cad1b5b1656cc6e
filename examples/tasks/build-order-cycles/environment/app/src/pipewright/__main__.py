import sys

from pipewright.cli import main

sys.exit(main())
