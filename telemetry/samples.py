"""One DCGM-Exporter reading of one GPU (or MIG instance), whatever it came from: a scraped
exporter page or a Prometheus range query. PURE: no Django, no network."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class GpuSample:
    time: datetime  # timezone-aware
    hostname: str  # the exporter's `Hostname` label: the node
    gpu: str  # the `gpu` label: the GPU's index on the node, as text
    uuid: str  # `UUID`: "GPU-..."
    model: str = ""  # `modelName`
    gi_id: str = ""  # `GPU_I_ID`: the MIG GPU instance ("" on a whole GPU)
    gi_profile: str = ""  # `GPU_I_PROFILE`, e.g. "1g.10gb"
    util: float | None = None  # DCGM_FI_DEV_GPU_UTIL, percent 0-100
    gr_active: float | None = None  # DCGM_FI_PROF_GR_ENGINE_ACTIVE, ratio 0-1, where present
    fb_used_mib: float | None = None  # DCGM_FI_DEV_FB_USED, MiB
    namespace: str = ""  # `namespace`, or `exported_namespace` after a Prometheus scrape
    pod: str = ""
    container: str = ""

    @property
    def device(self) -> tuple[str, str, str]:
        """What one series measures: a GPU, or one MIG instance of it."""
        return (self.hostname, self.uuid or self.gpu, self.gi_id)

    @property
    def busy(self) -> float | None:
        """Utilisation in percent: the graphics engine's activity where the exporter has the
        profiling metric (true on MIG instances too), else the device's GPU_UTIL."""
        if self.gr_active is not None:
            return self.gr_active * 100.0
        return self.util
