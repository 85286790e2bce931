"""Which addresses count as public for evidence fetching, and how a URL is shown."""

from __future__ import annotations

import pytest

from council.adapters.sources import without_credentials
from council.adapters.url_fetch import _public


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
        "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "ff02::1", "::ffff:10.0.0.1",
        "::ffff:127.0.0.1",
    ],
)  # fmt: skip
def test_loopback_private_link_local_multicast_and_unspecified_addresses_are_not_public(address: str) -> None:
    assert _public(address) is False


@pytest.mark.parametrize("address", ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "::ffff:1.1.1.1"])
def test_global_unicast_addresses_are_public(address: str) -> None:
    assert _public(address) is True


def test_credentials_are_dropped_from_a_shown_url_and_nothing_else() -> None:
    assert without_credentials("http://u:p@example.org:8080/a?b=c#d") == "http://example.org:8080/a?b=c#d"
    assert without_credentials("https://token@example.org/") == "https://example.org/"
    assert without_credentials("http://example.org/a@b") == "http://example.org/a@b"
    assert without_credentials("http://u:p@[::1") == "http://[::1"  # even where it cannot be parsed
