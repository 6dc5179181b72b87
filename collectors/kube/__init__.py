"""Kubernetes batch schedulers over the API server: Kueue and Volcano readers and quota writers."""

from collectors.kube.api import KubeApi, PatchRefusedError
from collectors.kube.auth import connect
from collectors.kube.kueue import KueueQuotaWriter, KueueReader
from collectors.kube.volcano import VolcanoQuotaWriter, VolcanoReader

__all__ = [
    "KubeApi",
    "KueueQuotaWriter",
    "KueueReader",
    "PatchRefusedError",
    "VolcanoQuotaWriter",
    "VolcanoReader",
    "connect",
]
