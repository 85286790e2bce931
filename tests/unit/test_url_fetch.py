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


@pytest.mark.parametrize(
    "address",
    [
        "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "64:ff9b:1::a9fe:a9fe",  # local-use NAT64 of 169.254.169.254
        "2002:a00:1::1",  # 6to4 of 10.0.0.1
        "2002:c0a8:101::",  # 6to4 of 192.168.1.1
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo (client 192.0.2.45)
        "::a00:1",  # IPv4-compatible 10.0.0.1
        "::7f00:1",  # IPv4-compatible 127.0.0.1
        "::ffff:a9fe:a9fe",  # IPv4-mapped 169.254.169.254, in hex
    ],
)
def test_an_ipv6_address_carrying_a_private_ipv4_address_is_not_public(address: str) -> None:
    assert _public(address) is False


@pytest.mark.parametrize("address", ["64:ff9b::808:808", "2002:808:808::1"])
def test_an_ipv6_address_carrying_a_public_ipv4_address_is_public(address: str) -> None:
    assert _public(address) is True


@pytest.mark.parametrize("address", ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "::ffff:1.1.1.1"])
def test_global_unicast_addresses_are_public(address: str) -> None:
    assert _public(address) is True


def test_credentials_are_dropped_from_a_shown_url_and_nothing_else() -> None:
    assert without_credentials("http://u:p@example.org:8080/a?b=c#d") == "http://example.org:8080/a?b=c#d"
    assert without_credentials("https://token@example.org/") == "https://example.org/"
    assert without_credentials("http://example.org/a@b") == "http://example.org/a@b"
    assert without_credentials("http://u:p@[::1") == "http://[::1"  # even where it cannot be parsed
