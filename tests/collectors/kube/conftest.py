from __future__ import annotations

from collections.abc import Iterator

import pytest

from collectors.kube import KubeApi
from tests.collectors.kube.objects import fake_kube
from tests.collectors.kube.server import FakeKube, serve


@pytest.fixture
def kube() -> FakeKube:
    return fake_kube()


@pytest.fixture
def api(kube: FakeKube) -> Iterator[KubeApi]:
    with serve(kube) as url:
        client = KubeApi(url, token="test-token")
        yield client
        client.close()
