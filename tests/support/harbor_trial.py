"""One Harbor trial on sprout's environment, run by the Harbor virtualenv's interpreter
(Harbor needs Python 3.12+): `python harbor_trial.py TASK AGENT TRIALS_DIR`. Harbor's own
`Trial` runs it, as `harbor run --environment-import-path` would; the trial's folder is
printed, and Harbor writes its result.json there."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from harbor.models.trial.config import AgentConfig, EnvironmentConfig, TaskConfig, TrialConfig
from harbor.trial.trial import Trial

IMPORT_PATH = "sprout.integrations.harbor:SproutHarborEnvironment"


async def main(task: str, agent: str, trials: str) -> None:
    config = TrialConfig(
        task=TaskConfig(path=Path(task)),
        trials_dir=Path(trials),
        agent=AgentConfig(name=agent),
        environment=EnvironmentConfig(import_path=IMPORT_PATH),
    )
    trial = await Trial.create(config)
    await trial.run()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
