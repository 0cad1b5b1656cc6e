"""Dockerfiles read as Docker reads them: plans without sandboxes, then a few real builds."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox
from sprout.task import SetupStep, TaskError
from sprout.tasks import base_checkpoint_of, load_native
from sprout.tasks.dockerfile.context import Ignore, clean_source, matches
from sprout.tasks.dockerfile.parse import ARCH, DEFAULT_PATH, DockerfilePlan, plan_dockerfile
from sprout.tasks.dockerfile.words import ExpansionError, expand
from tests.support.taskfolders import write_task


def plan(
    text: str, context: Path | None = None, build_args: dict[str, str] | None = None
) -> DockerfilePlan:
    return plan_dockerfile(text, where="Dockerfile", context=context, build_args=build_args)


def copies(steps: list[SetupStep]) -> list[tuple[str, str]]:
    return [(s.source, s.destination) for s in steps if s.kind == "copy"]


@pytest.fixture
def context(tmp_path: Path) -> Path:
    folder = tmp_path / "environment"
    (folder / "src" / "pkg").mkdir(parents=True)
    (folder / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (folder / "src" / "pkg" / "__init__.py").write_text("")
    (folder / "setup.cfg").write_text("[metadata]\n")
    (folder / "extra.cfg").write_text("[extra]\n")
    return folder


# --- COPY and ADD: destinations, sources, wildcards ---------------------------------------


def test_copy_destinations_keep_what_docker_reads_from_them(context: Path):
    found = plan(
        "FROM host\nWORKDIR /app\nCOPY setup.cfg /app\nCOPY src/ /app/src/\nCOPY . .\n"
        "COPY setup.cfg extra.cfg conf/\nCOPY src ../srv\n",
        context,
    )
    assert copies(found.steps) == [
        ("setup.cfg", "/app"),  # a directory there or not: decided in the sandbox
        ("src", "/app/src/"),
        (".", "/app/"),
        ("setup.cfg", "/app/conf/"),
        ("extra.cfg", "/app/conf/"),
        ("src", "/srv"),
    ]


def test_several_sources_need_a_directory_destination(context: Path):
    with pytest.raises(TaskError, match=r"Dockerfile:2: COPY with more than one source needs"):
        plan("FROM host\nCOPY setup.cfg extra.cfg /etc/conf\n", context)
    with pytest.raises(TaskError, match=r"COPY \*\.cfg names 2 files: the destination must"):
        plan("FROM host\nCOPY *.cfg /etc/conf\n", context)
    assert copies(plan("FROM host\nCOPY *.cfg /etc/\n", context).steps) == [("*.cfg", "/etc/")]


def test_wildcards_match_in_the_context_and_may_match_nothing(context: Path):
    assert matches(context, "*.cfg") == ["extra.cfg", "setup.cfg"]
    assert matches(context, "src/*.py") == ["src/calc.py"]
    assert matches(context, "s?c/[a-c]alc.py") == ["src/calc.py"]
    assert matches(context, "*.toml") == []
    assert copies(plan("FROM host\nCOPY *.toml /etc/\n", context).steps) == [("*.toml", "/etc/")]


def test_sources_never_climb_out_of_the_context(context: Path):
    assert clean_source("../../etc/passwd") == "etc/passwd"
    assert clean_source("/src/./pkg/..") == "src"
    with pytest.raises(TaskError, match=r"COPY \.\./setup\.cfg\.bak: no such file"):
        plan("FROM host\nCOPY ../setup.cfg.bak /x\n", context)
    assert copies(plan("FROM host\nCOPY ../setup.cfg /x\n", context).steps) == [("setup.cfg", "/x")]
    (context / "escape").symlink_to("/etc")
    with pytest.raises(TaskError, match="links out of the build context"):
        plan("FROM host\nCOPY escape /x/\n", context)


def test_a_missing_source_is_named_with_its_line(context: Path):
    with pytest.raises(TaskError, match=r"Dockerfile:3: COPY nothere: no such file in "):
        plan("FROM host\nWORKDIR /app\nCOPY nothere /app/\n", context)


def test_dockerignore_leaves_paths_out(context: Path):
    (context / ".dockerignore").write_text("# build junk\n*.cfg\n!setup.cfg\n**/__init__.py\n")
    ignore = Ignore(("*.cfg", "!setup.cfg", "**/__init__.py", "build"))
    assert ignore("extra.cfg") and not ignore("setup.cfg")
    assert ignore("src/pkg/__init__.py") and not ignore("src/calc.py")
    assert ignore("build/out/x.o"), "a pattern that names a folder covers all under it"
    found = plan("FROM host\nCOPY setup.cfg /etc/\n", context)
    assert found.steps[0].ignore == ("*.cfg", "!setup.cfg", "**/__init__.py")
    with pytest.raises(TaskError, match=r"COPY extra\.cfg: no such file .*dockerignore leaves"):
        plan("FROM host\nCOPY extra.cfg /etc/\n", context)


def test_add_unpacks_local_archives_and_fetches_urls(context: Path):
    found = plan(
        "FROM host\nADD setup.cfg /etc/\n"
        "ADD --checksum=sha256:" + "0" * 64 + " https://example.com/tool.tar.gz /opt/\n",
        context,
    )
    local, remote = found.steps
    assert local.unpack and local.source == "setup.cfg"
    assert not remote.unpack and remote.source == "https://example.com/tool.tar.gz"
    assert remote.checksum == "sha256:" + "0" * 64
    with pytest.raises(TaskError, match="COPY cannot read a URL"):
        plan("FROM host\nCOPY https://example.com/x /x\n", context)
    with pytest.raises(TaskError, match="adding a git repository is not supported"):
        plan("FROM host\nADD https://github.com/acme/tool.git /src\n", context)
    with pytest.raises(TaskError, match="--checksum=md5:1: expected sha256"):
        plan("FROM host\nADD --checksum=md5:1 https://example.com/x /x\n", context)


def test_chown_and_chmod_go_on_the_step_and_unknown_flags_are_errors(context: Path):
    found = plan("FROM host\nARG OWNER=app\nCOPY --chown=$OWNER:staff --chmod=0750 src /app/\n")
    assert (found.steps[0].chown, found.steps[0].chmod) == ("app:staff", "0750")
    with pytest.raises(TaskError, match="--chmod=rwx: expected a mode"):
        plan("FROM host\nCOPY --chmod=rwx src /app/\n")
    with pytest.raises(TaskError, match=r"Dockerfile:2: COPY --parents is not supported"):
        plan("FROM host\nCOPY --parents src /app/\n")
    assert plan("FROM host\nCOPY --link src /app/\n").steps[0].destination == "/app/"


# --- multi-stage builds ---------------------------------------------------------------------

MULTI_STAGE = """\
FROM host AS Builder
WORKDIR /build
RUN echo built > artifact && echo junk > other
FROM host AS unused
RUN echo never
FROM python:3.11-slim
WORKDIR /app
COPY --from=builder /build/artifact /app/
COPY --from=0 /build/other /app/copy-of-other
COPY --from=alpine:3.20 /etc/alpine-release /app/
"""


def test_stages_are_built_apart_and_only_those_copied_from():
    found = plan(MULTI_STAGE)
    assert found.image == "python:3.11-slim"
    assert [(s.name, s.image) for s in found.stages] == [("builder", "host"), ("", "alpine:3.20")]
    builder, alpine = found.stages
    assert [s.command for s in builder.steps] == ["echo built > artifact && echo junk > other"]
    assert builder.workdir == "/build" and alpine.steps == ()
    assert [(s.stage, s.source, s.destination) for s in found.steps] == [
        (0, "/build/artifact", "/app/"),
        (0, "/build/other", "/app/copy-of-other"),
        (1, "/etc/alpine-release", "/app/"),
    ]
    assert all(s.kind == "copy" for s in found.steps), "no stage's RUN is in the last one"


def test_a_stage_built_on_another_continues_it():
    found = plan(
        "FROM host AS base\nENV MODE=base\nWORKDIR /srv\nRUN echo one\n"
        "FROM base AS test\nRUN echo two\nFROM base\nRUN echo three\n"
    )
    assert found.image == "host" and found.stages == []
    assert [s.command for s in found.steps] == ["echo one", "echo three"]
    assert found.workdir == "/srv" and found.env == {"MODE": "base"}


def test_the_images_of_stages_are_checked_when_the_task_loads(tmp_path: Path):
    folder = make_task(
        tmp_path,
        "FROM python:3.11-slim AS builder\nRUN true\nFROM host\nCOPY --from=builder /x /x\n",
    )
    task = load_native(folder)
    assert [(s.name, s.image) for s in task.stages] == [("builder", "python:3.11-slim")]
    assert task.warnings == ()  # whether it is pulled or approximated, the run says
    (folder / "environment" / "Dockerfile").write_text("FROM host\nCOPY --from=acme/tool:2 /x /x\n")
    assert [s.image for s in load_native(folder).stages] == ["acme/tool:2"]
    (folder / "environment" / "Dockerfile").write_text("FROM host\nCOPY --from=x@sha256:1 /x /x\n")
    with pytest.raises(TaskError, match=r"image 'x@sha256:1': the digest must be sha256"):
        load_native(folder)


def test_copy_from_a_later_or_the_same_stage_is_an_error():
    with pytest.raises(TaskError, match="--from=2: no earlier stage 2"):
        plan("FROM host\nFROM host\nCOPY --from=2 /x /y\n")
    with pytest.raises(TaskError, match="a stage cannot copy from itself"):
        plan("FROM host AS me\nCOPY --from=me /x /y\n")


# --- ARG and ENV ----------------------------------------------------------------------------


def test_args_before_from_pick_the_image_and_need_redeclaring_in_a_stage():
    text = (
        "ARG BASE=python:3.11\nARG TAG\nFROM ${BASE}${TAG:+-$TAG}\n"
        "RUN echo $BASE\nARG BASE\nARG TARGETARCH\nRUN echo $BASE\n"
    )
    found = plan(text)
    assert found.image == "python:3.11"
    first, second = found.steps
    assert "BASE" not in first.env, "a global ARG is not visible until the stage declares it"
    assert second.env == {"BASE": "python:3.11", "TARGETARCH": ARCH}
    assert plan(text, build_args={"TAG": "slim"}).image == "python:3.11-slim"


def test_env_expands_as_docker_does():
    found = plan(
        "FROM host\nARG MODE\nENV A=1 B=$A\nENV C=${A}2 D=${MODE:-dev} E=${A:+set} F=${NONE:+x}\n"
        "ENV PATH=/opt/venv/bin:$PATH G='$A' H=\"$A $A\"\nENV LEGACY value with spaces\n"
        "ARG MODE=prod\nENV I=$MODE\nRUN true\n"
    )
    assert found.env == {
        "A": "1",
        "B": "",  # a pair sees the values from before its line
        "C": "12",
        "D": "dev",
        "E": "set",
        "F": "",
        "PATH": f"/opt/venv/bin:{DEFAULT_PATH}",
        "G": "$A",
        "H": "1 1",
        "LEGACY": "value with spaces",
        "I": "prod",
    }
    assert found.steps[0].env["MODE"] == "prod", "RUN sees ARGs as variables"
    assert any("$A is set by no ARG or ENV" in w for w in found.warnings)


def test_a_stages_words_see_its_images_own_env_where_it_is_known():
    bases = {"go:1": {"PATH": "/usr/local/go/bin:/usr/bin", "GOPATH": "/go"}, "bare:1": {}}
    found = plan_dockerfile(
        "FROM go:1 AS build\nENV PATH=/x:$PATH\nFROM build\nENV SRC=$GOPATH/src\n"
        "FROM bare:1\nENV BARE=$PATH\nFROM unknown:1\nENV V=$VERSION\n",
        where="Dockerfile",
        base_env=bases.get,
    )
    assert found.env == {"V": ""}
    stages = plan_dockerfile(
        "FROM go:1 AS a\nENV P=$PATH\nFROM a AS b\nENV S=$GOPATH/src\nFROM bare:1 AS c\n"
        "ENV B=$PATH\nFROM unknown:1\nCOPY --from=a /a /a\nCOPY --from=b /b /b\n"
        "COPY --from=c /c /c\n",
        where="Dockerfile",
        base_env=bases.get,
    ).stages
    env = {stage.name: stage.env for stage in stages}
    assert env["b"] == {"P": "/usr/local/go/bin:/usr/bin", "S": "/go/src"}  # FROM a, on go:1
    assert env["c"] == {"B": DEFAULT_PATH}  # an image with no PATH gets BuildKit's
    [warning] = found.warnings
    assert "$VERSION" in warning and "unknown:1's own ENV is not known" in warning


def test_the_last_stage_over_an_image_that_replaces_its_from_sees_that_images_env():
    bases = {"go:1": {"GOPATH": "/go"}, "mine:2": {"GOPATH": "/mine", "PATH": "/m/bin"}}
    text = "FROM go:1 AS build\nENV B=$GOPATH\nFROM build\nENV SRC=$GOPATH/src P=$PATH\n"
    found = plan_dockerfile(text, where="Dockerfile", base_env=bases.get, final_base="mine:2")
    assert found.env == {"B": "/go", "SRC": "/mine/src", "P": "/m/bin"}, "it continues build"
    text = "FROM go:1 AS build\nENV B=$GOPATH\nFROM go:1\nCOPY --from=build /b /b\nENV S=$GOPATH\n"
    found = plan_dockerfile(text, where="Dockerfile", base_env=bases.get, final_base="mine:2")
    [build] = found.stages
    assert build.env == {"B": "/go"}, "an earlier stage keeps its own image's"
    assert found.env == {"S": "/mine"}


def test_word_expansion_follows_buildkit():
    env = {"A": "1", "EMPTY": "", "FILE": "archive.tar.gz"}
    assert expand("'$A' \"$A\" \\$A $A${A}", env) == "$A 1 $A 11"
    assert expand("${EMPTY:-d} ${EMPTY-d} ${UNSET-d} ${EMPTY:+x} ${EMPTY+x}", env) == "d  d  x"
    assert expand("${FILE%.gz} ${FILE%%.*} ${FILE#*.} ${FILE##*.}", env) == (
        "archive.tar archive tar.gz gz"
    )
    assert expand("${FILE/tar/zip} ${A//1/one}", env) == "archive.zip.gz one"
    assert expand("a`$A", env, escape="`") == "a$A"
    assert expand("keep 'quotes' \\$A \\n", env, quotes=False) == "keep 'quotes' $A \\n"
    with pytest.raises(ExpansionError, match="UNSET: must be set"):
        expand("${UNSET:?must be set}", env)
    with pytest.raises(ExpansionError, match="unterminated single quote"):
        expand("'open", env)


def test_an_escape_directive_changes_the_escape_character():
    found = plan('# escape=`\nFROM host\nENV A=x`$y B="q`"q"\n')
    assert found.env == {"A": "x$y", "B": 'q"q'}


# --- RUN: heredocs, exec form, SHELL, USER, flags -------------------------------------------


def test_run_heredocs_keep_their_text():
    found = plan(
        "FROM host\nRUN <<EOF\ncat > /app/main.c <<'C'\n#include <stdio.h>\n"
        "int main(void) { return 0; }\nC\nEOF\n"
        "RUN <<-EOF\n\techo tabbed\n\tEOF\n"
        "RUN python3 <<'PY' > /out\nprint(1)\nPY\n"
        "RUN <<EOF\n#!/usr/bin/env python3\nprint(2)\nEOF\n"
    )
    alone, chomped, fed, script = found.steps
    assert alone.command == (
        "cat > /app/main.c <<'C'\n#include <stdio.h>\nint main(void) { return 0; }\nC\n"
    )
    assert chomped.command == "echo tabbed\n"
    assert fed.command == "python3 <<'PY' > /out\nprint(1)\nPY"
    assert script.command.startswith("script=$(mktemp)") and "#!/usr/bin/env python3\n" in (
        script.command
    )


def test_copy_heredocs_make_files():
    found = plan(
        "FROM host\nARG WHO=world\nCOPY <<EOF <<'RAW' /etc/greet/\nhello $WHO\nEOF\n$WHO\nRAW\n"
        "COPY --chmod=755 <<-EOF /usr/local/bin/tool\n\t#!/bin/sh\n\techo tool\n\tEOF\n"
    )
    expanded, raw, tool = found.steps
    assert (expanded.source, expanded.content, expanded.destination) == (
        "EOF",
        "hello world\n",
        "/etc/greet/",
    )
    assert raw.content == "$WHO\n", "a quoted delimiter keeps the text as it is"
    assert (tool.content, tool.destination, tool.chmod) == (
        "#!/bin/sh\necho tool\n",
        "/usr/local/bin/tool",
        "755",
    )


def test_exec_form_shell_and_user_shape_the_run_steps():
    found = plan(
        'FROM host\nRUN ["echo", "a b"]\nSHELL ["/bin/bash", "-o", "pipefail", "-c"]\n'
        "USER app:staff\nRUN echo $HOME\nUSER root\nRUN id\n"
    )
    exec_form, as_app, as_root = found.steps
    assert (exec_form.command, exec_form.shell) == ("echo 'a b'", ())
    assert as_app.shell == ("/bin/bash", "-o", "pipefail", "-c") and as_app.user == "app:staff"
    assert as_app.command == "echo $HOME", "RUN's own text is left to its shell"
    assert as_root.user == "root" and found.user == "root" and not found.warnings
    with pytest.raises(TaskError, match="SHELL needs the JSON form"):
        plan("FROM host\nSHELL /bin/bash -c\n")


def test_the_last_user_and_its_line_are_the_tasks(tmp_path: Path):
    task = write_task(
        tmp_path,
        "as-user",
        instruction="Do it.\n",
        dockerfile="FROM host\nUSER nobody\nRUN true\n",
        tests={"test.sh": "true\n"},
    )
    loaded = load_native(task)
    assert (loaded.user, loaded.user_origin) == ("nobody", "environment/Dockerfile:2")
    assert loaded.warnings == ()


def test_run_mounts_cache_is_ignored_with_a_warning_and_bind_is_refused():
    found = plan("FROM host\nRUN --mount=type=cache,target=/root/.cache pip install x\n")
    assert found.steps[0].command == "pip install x"
    assert "RUN --mount=type=cache is ignored" in found.warnings[0]
    with pytest.raises(TaskError, match="Dockerfile:2: RUN --mount=type=bind is not supported"):
        plan("FROM host\nRUN --mount=type=bind,source=x,target=/x make\n")


def test_container_instructions_are_recorded():
    found = plan(
        "FROM host\nLABEL a=b\nEXPOSE 80\nVOLUME /data\nSTOPSIGNAL SIGTERM\n"
        "HEALTHCHECK CMD true\nONBUILD RUN echo\nMAINTAINER me\n"
        'ENTRYPOINT ["python3"]\nCMD ["-m", "http.server"]\n'
    )
    assert found.steps == []
    assert [(r.where, r.instruction) for r in found.recorded] == [
        ("Dockerfile:2", "LABEL"),
        ("Dockerfile:3", "EXPOSE"),
        ("Dockerfile:4", "VOLUME"),
        ("Dockerfile:5", "STOPSIGNAL"),
        ("Dockerfile:6", "HEALTHCHECK"),
        ("Dockerfile:7", "ONBUILD"),
        ("Dockerfile:8", "MAINTAINER"),
        ("Dockerfile:9", "ENTRYPOINT"),
        ("Dockerfile:10", "CMD"),
    ]
    assert found.recorded[-1].arguments == ("-m", "http.server")


def test_what_docker_would_refuse_is_an_error_naming_the_file():
    with pytest.raises(TaskError, match=r"Dockerfile:1: RUN before the first FROM"):
        plan("RUN echo\n")
    with pytest.raises(TaskError, match=r"Dockerfile: unterminated heredoc"):
        plan("FROM host\nRUN <<EOF\necho\n")
    with pytest.raises(TaskError, match=r"Dockerfile:2: ENV: .*unterminated double quote"):
        plan('FROM host\nENV A="open\n')


# --- real builds ----------------------------------------------------------------------------


def make_task(root: Path, dockerfile: str, files: dict[str, str | bytes] | None = None) -> Path:
    """A native task over the host image (no image build) with `files` in its context."""
    return write_task(
        root,
        "built",
        instruction="Look around.\n",
        dockerfile=dockerfile,
        environment=files,
        tests={"test.sh": "true\n"},
    )


def run_in(store: LayerStore, checkpoint: str, command: str) -> str:
    with Sandbox.fork(store, checkpoint) as sandbox:
        seen = sandbox.run(command)
    assert seen.exit_code == 0, seen.output
    return seen.output


def tar_of(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            info.mode = 0o750
            archive.addfile(info, io.BytesIO(text.encode()))
    return buffer.getvalue()


@pytest.mark.sandbox
def test_copy_onto_existing_directories_merges_as_docker_does(
    overlay_store: LayerStore, tmp_path: Path
):
    dockerfile = (
        "FROM host\nWORKDIR /app\nRUN echo kept > old.txt\n"
        "COPY setup.cfg /app\n"  # into the directory, not over it
        "COPY src /app\n"  # the folder's contents, next to what /app held
        "COPY setup.cfg /etc/sprout-test/renamed.cfg\n"
        "ADD tool.tar.gz /opt/tool\n"
        "COPY . /ctx/\n"
        'CMD ["python3", "-m", "http.server"]\nENTRYPOINT /bin/false\n'
    )
    files: dict[str, str | bytes] = {
        "setup.cfg": "[metadata]\n",
        "src/calc.py": "x = 1\n",
        "tool.tar.gz": tar_of({"bin/tool": "#!/bin/sh\n"}),
        ".dockerignore": "**/*.pyc\n",
        "src/junk.pyc": "junk",
    }
    task = load_native(make_task(tmp_path, dockerfile, files))
    base = base_checkpoint_of(task, overlay_store)
    output = run_in(
        overlay_store,
        base,
        "cd /app && ls -A . | sort | tr '\\n' ' '; echo; cat old.txt; "
        "cat /etc/sprout-test/renamed.cfg; stat -c '%a %u' /opt/tool/bin/tool; "
        "ls /ctx | tr '\\n' ' '; echo; ls /ctx/src; ls -A /app/.. | grep -c sprout-copy || true",
    )
    lines = output.splitlines()
    assert lines[0] == "calc.py old.txt setup.cfg ", "COPY src puts its contents into /app"
    assert lines[1:3] == ["kept", "[metadata]"]
    assert lines[3] == "750 0", "the archive is unpacked with its modes, owned by root"
    assert lines[4] == "Dockerfile setup.cfg src tool.tar.gz "
    assert lines[5:] == ["calc.py", "0"], ".dockerignore leaves junk.pyc out"


@pytest.mark.sandbox
def test_copy_from_a_stage_takes_only_what_it_names(overlay_store: LayerStore, tmp_path: Path):
    dockerfile = (
        "FROM host AS builder\nWORKDIR /build\n"
        "RUN mkdir out && echo built > out/artifact && echo junk > other && ln -s artifact "
        "out/link\n"
        "FROM host\nWORKDIR /app\n"
        "COPY --from=builder /build/out/ /app/dist/\n"
        "COPY --from=builder --chown=nobody /build/out/artifact /app/owned\n"
    )
    task = load_native(make_task(tmp_path, dockerfile))
    assert [s.kind for s in task.setup] == ["copy", "copy"]
    base = base_checkpoint_of(task, overlay_store)
    output = run_in(
        overlay_store,
        base,
        "cat /app/dist/artifact; readlink /app/dist/link; stat -c %U:%g /app/owned; "
        "ls /build 2>&1 || true; ls /app/dist/other 2>&1 || true",
    )
    lines = output.splitlines()
    assert lines[:3] == ["built", "artifact", "nobody:65534"]
    assert "No such file" in lines[3] and "No such file" in lines[4], "the stage stays apart"


@pytest.mark.sandbox
def test_run_heredocs_users_and_shells(overlay_store: LayerStore, tmp_path: Path):
    dockerfile = (
        "FROM host\nWORKDIR /app\nRUN chmod 777 /app\n"
        "RUN <<EOF\ncat > /app/main.c <<'C'\n#include <stdio.h>\nint main(void) { return 0; }\n"
        "C\nEOF\n"
        "RUN <<EOF\n#!/usr/bin/env python3\nopen('/app/py.txt', 'w').write('from python')\nEOF\n"
        "USER nobody\nRUN id -un > who; echo $HOME > home\n"
        'SHELL ["/bin/bash", "-c"]\nRUN echo ${BASH_VERSION:+bash} > shell\n'
    )
    task = load_native(make_task(tmp_path, dockerfile))
    base = base_checkpoint_of(task, overlay_store)
    output = run_in(
        overlay_store, base, "head -1 main.c; cat py.txt; echo; cat who home shell; stat -c %U who"
    )
    assert output.splitlines() == [
        "#include <stdio.h>",
        "from python",
        "nobody",
        "/nonexistent",
        "bash",
        "nobody",
    ]
