"""sprout's sandbox as a Harbor environment: any of Harbor's agents, on a Terminal-Bench 2
task, in sprout's jail instead of a Docker container.

    harbor run -p tasks/two-edits -a oracle \\
      -e sprout.integrations.harbor:SproutHarborEnvironment

Harbor needs Python 3.12 or later; this module imports it, so it runs in the virtualenv
Harbor is installed in, with sprout beside it (docs/integrations.md).

`start` builds checkpoint 0 from the task folder as `sprout run` does (the task's
Dockerfile translated, its image pulled or taken from the image cache, no daemon) in a
sprout run folder inside the trial's folder, `TRIAL/sprout-run`, and opens a sandbox on
it. Every `exec` runs in the jail, as the user Harbor asks for (resolved through the
image's own /etc/passwd), and is sealed as a checkpoint, one turn of the run's one
attempt, so `sprout view TRIAL/sprout-run` shows the trial and `sprout shell
TRIAL/sprout-run 1:k` opens the files after its k-th command. Uploads and downloads copy
between the host and the sandbox's layers; `stop` records the verifier's reward, read
from the file Harbor's verifier reads, as the attempt's.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities
from harbor.models.task.config import NetworkMode, NetworkPolicy

from sprout.agent.turn_records import call_record
from sprout.errors import SproutError
from sprout.integrations.command_turns import commit_command_turn
from sprout.runfolder import RunFolder
from sprout.sandbox import Network, RunAs, Sandbox, SandboxFork
from sprout.tasks.discover import load_one_task
from sprout.tasks.setup.users import ROOT, resolve_user
from sprout.tasksandbox import TaskSandboxService
from sprout.tree import CallRecord

TYPE = "sprout"
METHOD = "harbor"
"""The method the run records the trial's attempt under."""
NO_TIMEOUT_S = 24 * 3600
"""A command Harbor gives no timeout: bounded all the same, as every sprout call is."""
REWARD_FILE = "/logs/verifier/reward.txt"


class HarborTaskError(SproutError, ValueError):
    """A Harbor task folder sprout cannot build: one line naming the folder and why."""


class SproutHarborEnvironment(BaseEnvironment):
    """One Harbor trial's environment: one sprout sandbox, one attempt in a run folder."""

    @staticmethod
    def type() -> str:
        return TYPE

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        """What sprout's network policies enforce: none, public, or an allow-list of host
        names, wildcards and IPv4 addresses, switched between phases (the agent's, the
        verifier's) by forking the sandbox anew on a sealed checkpoint."""
        return EnvironmentCapabilities(
            disable_internet=True,
            network_allowlist=True,
            network_allowlist_hostnames=True,
            network_allowlist_wildcard_hostnames=True,
            network_allowlist_ipv4_addresses=True,
            dynamic_network_policy=True,
        )

    def _validate_definition(self) -> None:
        """The task folder must be one sprout reads (a TB2 task: environment/Dockerfile)."""
        if not (self.environment_dir / "Dockerfile").is_file():
            raise HarborTaskError(f"{self.environment_dir}: no Dockerfile for sprout to build")

    async def start(self, force_build: bool) -> None:
        """Checkpoint 0 of the task, built (or taken from the image cache) as `sprout run`
        builds it, and a sandbox on it as the image's USER."""
        self.task = load_one_task(self.environment_dir.parent)
        self.run = RunFolder.create(self.trial_paths.trial_dir / "sprout-run")
        try:
            self._service = TaskSandboxService(self.run.layers)
            self.base_checkpoint = self._service.base_checkpoint(self.task, replays=False)
        except BaseException:
            self.run.close()
            raise
        tree = self.run.tree
        tree.add_task(self.task.id, self.task.model_dump(mode="json"))
        tree.start_schedule(self.task.id, METHOD)
        self.attempt = tree.root(self.task.id, [], self.base_checkpoint, method=METHOD)
        self._user: str | int | None = None
        # who a command with no user runs as: the image's USER, as in Docker
        self._image_user = self.run.layers.layer(self.base_checkpoint).config.user or ROOT
        self._network = _network(self.network_policy)
        self._sandbox = Sandbox.fork(
            self.run.layers, self.base_checkpoint, user=self._image_user, network=self._network
        )
        self._turns = 0
        # the log folders Docker would mount, made as Harbor's remote environments make them
        await self.ensure_dirs(self._mount_targets(writable_only=True))

    async def stop(self, delete: bool) -> None:
        """The attempt ended with the verifier's reward (an `error`, never a failure, when
        it wrote none), the sandbox closed and the run folder with it."""
        if not hasattr(self, "_sandbox") or self._sandbox.closed:  # not started, or stopped
            return
        tree = self.run.tree
        reward = _reward(self._sandbox.read(REWARD_FILE))
        self._sandbox.close()
        if reward is None:  # the verifier did not run, or wrote nothing: not a failure
            reason = f"the Harbor trial ended with no {REWARD_FILE}"
            tree.finish_attempt(self.attempt.id, "error", reason, fault="sprout")
        else:
            tree.finish_attempt(self.attempt.id, "submitted", "the Harbor trial ended")
            diagnostics = {"reward": reward, "source": REWARD_FILE, "tests": []}
            tree.set_outcome(self.attempt.id, reward, diagnostics, None)
        passed = tree.attempt(self.attempt.id).passed
        tree.finish_schedule(self.task.id, METHOD, resolved=passed, error=None)
        self.run.close()

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        """`command` in the jail as `user`, sealed as the attempt's next turn; a timeout
        raises, as Harbor's Docker environment does."""
        self._as(self._resolve_user(user))
        lines = [f"export {k}={shlex.quote(v)}" for k, v in (self._merge_env(env) or {}).items()]
        if cwd:
            lines.append(f"cd {shlex.quote(cwd)} || exit")
        seen = self._sandbox.run("\n".join([*lines, command]), timeout=timeout_sec or NO_TIMEOUT_S)
        self._seal(call_record(command, seen))
        if seen.timed_out or seen.exit_code is None:
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds")
        return ExecResult(stdout=seen.output, stderr="", return_code=seen.exit_code)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        self._sandbox.put(source_path, target_path)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        """The directory's contents into `target_dir`, beside what it holds (`docker cp
        SRC/. DST`)."""
        for child in sorted(Path(source_dir).iterdir()):
            self._sandbox.put(child, f"{target_dir.rstrip('/')}/{child.name}")

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        found = self._sandbox.read(source_path)
        if found is None:
            raise FileNotFoundError(f"{source_path}: no file in the sandbox")
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        Path(target_path).write_bytes(found)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        """The directory's contents into `target_dir`, read from a checkpoint of this
        moment (sealing one is free when nothing changed)."""
        checkpoint = self._sandbox.checkpoint()
        staging = Path(target_dir).with_name(f".{Path(target_dir).name}.sprout")
        shutil.rmtree(staging, ignore_errors=True)
        if not self.run.layers.export(checkpoint, source_dir, staging):
            raise FileNotFoundError(f"{source_dir}: no directory in the sandbox")
        shutil.copytree(staging, target_dir, dirs_exist_ok=True)
        shutil.rmtree(staging, ignore_errors=True)

    async def _apply_network_policy(self, network_policy: NetworkPolicy) -> None:
        """The next commands under `network_policy` (Harbor switches it between phases)."""
        self._network = _network(network_policy)
        self._refork(self._sandbox.config.user or self._image_user)

    def _as(self, user: str | int | None) -> None:
        """The sandbox running as `user` (None: the image's USER): a sandbox's user is fixed
        for its life, so a new user forks it anew."""
        if user == self._user:
            return
        run_as: RunAs = self._image_user
        if user is not None:
            spec = str(user)
            run_as = (
                ROOT
                if spec in ("root", "0")
                else resolve_user(self._sandbox, spec, self.task.id).run_as()
            )
        self._refork(run_as)
        self._user = user

    def _refork(self, run_as: RunAs) -> None:
        """The sandbox forked anew from a checkpoint of this moment (free when nothing
        changed), as `run_as` under the current network."""
        checkpoint = self._sandbox.checkpoint()
        self._sandbox.close()
        self._sandbox = Sandbox.fork(
            self.run.layers, checkpoint, user=run_as, network=self._network
        )

    def _seal(self, call: CallRecord) -> None:
        sealed = SandboxFork(self._sandbox).seal()
        self._turns += 1
        tree = self.run.tree
        commit_command_turn(tree, self.attempt.id, self._turns, [call], sealed, call.duration_s)


def _network(policy: NetworkPolicy) -> Network:
    """Harbor's network policy as a sprout sandbox's network."""
    if policy.network_mode == NetworkMode.NO_NETWORK:
        return False
    if policy.network_mode == NetworkMode.ALLOWLIST:
        return tuple(policy.allowed_hosts)
    return True


def _reward(text: bytes | None) -> float | None:
    """Harbor's reward.txt: one number; None when the verifier wrote none."""
    if text is None:
        return None
    try:
        return float(text.decode().strip())
    except ValueError:
        return None
