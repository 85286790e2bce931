"""Every hop of a fetch is checked after name resolution: real local servers, real
redirects. Loopback stands in for the Internet here, so the tests let one loopback
address, 127.0.0.2, count as public (no other part of the fetch is faked)."""

from __future__ import annotations

import pytest

from council.adapters import url_fetch
from tests.fakes.web_server import Site, serving

PUBLIC_STAND_IN = "127.0.0.2"


@pytest.fixture
def stand_in_is_public(monkeypatch: pytest.MonkeyPatch) -> None:
    real = url_fetch._public
    monkeypatch.setattr(url_fetch, "_public", lambda address: address == PUBLIC_STAND_IN or real(address))


@pytest.mark.usefixtures("stand_in_is_public")
@pytest.mark.parametrize("target_host", ["127.0.0.1", "localhost"], ids=["by-address", "by-name"])
def test_a_redirect_to_a_private_address_is_refused_before_it_is_requested(target_host: str) -> None:
    # Given a "public" page that redirects to a loopback server, named by address or by a name
    inner = Site(pages={"/paper.txt": b"internal"})
    with serving(inner) as inner_base:
        outer = Site(redirects={"/go": inner_base.replace("127.0.0.1", target_host) + "/paper.txt"})
        with serving(outer, host=PUBLIC_STAND_IN) as outer_base:
            # When it is fetched without allowing private addresses
            with pytest.raises(url_fetch.PrivateAddress, match="non-public address"):
                url_fetch.fetch(f"{outer_base}/go", timeout_s=10, allow_private=False, max_bytes=1000)
            # Then the first hop was requested, and the redirect's target never was
            assert [path for path, _ in outer.requests] == ["/go"]
            assert inner.requests == []
            # And with private addresses allowed, the redirect is followed
            fetched = url_fetch.fetch(f"{outer_base}/go", timeout_s=10, allow_private=True, max_bytes=1000)
            assert fetched.body == b"internal" and [p for p, _ in inner.requests] == ["/paper.txt"]


def test_the_first_hop_is_checked_too() -> None:
    site = Site(pages={"/paper.txt": b"x"})
    with serving(site) as base, pytest.raises(url_fetch.PrivateAddress):
        url_fetch.fetch(f"{base}/paper.txt", timeout_s=10, allow_private=False, max_bytes=1000)
    assert site.requests == []
