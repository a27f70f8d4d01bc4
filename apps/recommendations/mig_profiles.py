"""The MIG profiles right-sizing may recommend, per GPU model (docs/advice-and-alerts.md,
"The MIG profile table"), in plain Python.

Source: NVIDIA's *Multi-Instance GPU User Guide*, "Supported MIG Profiles" (the tables for
A30, A100, H100 and H200) and "Supported GPUs" (memory sizes). Each profile is named
`<compute slices>g.<memory>gb`; its memory is a fraction of the board's — eighths on the
7-slice GPUs, quarters on the A30 — and that fraction of the board's memory is what a workload
must fit in: e.g. H100 80 GB, `1g.10gb` = 1/8 × 80 GB = 10 GB = 10 × 10⁹ bytes = 9,536.7 MiB
(the instance the driver makes is a little larger, so the check errs on the safe side).
Media-extension profiles (`+me`) and the full-GPU profile (`7g.*`, `4g.24gb` on the A30) are
left out: the first adds decoders, not room, and the second saves nothing over a whole GPU.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

MIB_PER_GB = 10**9 / 2**20   # profile names count decimal gigabytes; DCGM_FI_DEV_FB_USED counts MiB


@dataclass(frozen=True)
class MigProfile:
    name: str              # e.g. "1g.10gb"
    slices: int            # compute slices (the "1g")
    memory_units: int    # memory, in units of 1/`memory_parts` of the board

    def memory_mib(self, model: "MigModel") -> float:
        return model.memory_gb * self.memory_units / model.memory_parts * MIB_PER_GB


@dataclass(frozen=True)
class MigModel:
    label: str             # as the docs' table names it
    pattern: re.Pattern    # matched against DCGM's modelName
    memory_gb: float
    max_slices: int
    memory_parts: int
    profiles: tuple[MigProfile, ...]


def _seven(sizes: tuple[str, str, str, str, str]) -> tuple[MigProfile, ...]:
    """The 7-slice GPUs' five sub-GPU profiles: 1g (1/8 memory), 1g with 2/8, 2g (2/8), 3g (4/8), 4g (4/8)."""
    small, double, two, three, four = sizes
    return (MigProfile(f"1g.{small}gb", 1, 1), MigProfile(f"1g.{double}gb", 1, 2), MigProfile(f"2g.{two}gb", 2, 2),
            MigProfile(f"3g.{three}gb", 3, 4), MigProfile(f"4g.{four}gb", 4, 4))


# Most specific first: the first pattern that matches a model name wins.
MIG_MODELS: tuple[MigModel, ...] = (
    MigModel("H200 141 GB", re.compile(r"\bH200\b"), 141, 7, 8, _seven(("18", "35", "35", "71", "71"))),
    MigModel("H100 NVL 94 GB", re.compile(r"\bH100\b.*(\bNVL\b|94\s?GB)", re.I), 94, 7, 8,
             _seven(("12", "24", "24", "47", "47"))),
    MigModel("H100 80 GB", re.compile(r"\bH100\b"), 80, 7, 8, _seven(("10", "20", "20", "40", "40"))),
    MigModel("A100 80 GB", re.compile(r"\bA100\b.*80\s?GB", re.I), 80, 7, 8, _seven(("10", "20", "20", "40", "40"))),
    MigModel("A100 40 GB", re.compile(r"\bA100\b"), 40, 7, 8, _seven(("5", "10", "10", "20", "20"))),
    MigModel("A30 24 GB", re.compile(r"\bA30\b"), 24, 4, 4, (MigProfile("1g.6gb", 1, 1), MigProfile("2g.12gb", 2, 2))),
)

# Board memory of GPUs without MIG, for sizing a time-sliced share (NVIDIA's data sheets).
SHARE_ONLY_MEMORY_GB: tuple[tuple[re.Pattern, float], ...] = (
    (re.compile(r"\bL40S?\b"), 48), (re.compile(r"\bL4\b"), 24), (re.compile(r"\bA10G?\b"), 24),
    (re.compile(r"\bA40\b"), 48), (re.compile(r"\bT4\b"), 16), (re.compile(r"RTX A6000|RTX 6000 Ada", re.I), 48),
)


def mig_model(gpu_model: str) -> MigModel | None:
    """The MIG table entry for a DCGM model name, or None for a GPU without MIG (L4, L40S…)."""
    for m in MIG_MODELS:
        if m.pattern.search(gpu_model or ""):
            return m
    return None


def board_memory_gb(gpu_model: str) -> float | None:
    m = mig_model(gpu_model)
    if m is not None:
        return m.memory_gb
    for pattern, gb in SHARE_ONLY_MEMORY_GB:
        if pattern.search(gpu_model or ""):
            return gb
    return None


def profile_named(model: MigModel, name: str) -> MigProfile | None:
    return next((p for p in model.profiles if p.name == name), None)
