"""`sessionkeeper.HTTPXAuth` with httpx.Client and httpx.AsyncClient, against a real daemon and the demo site."""

from __future__ import annotations

import asyncio

import httpx

import sessionkeeper


def test_httpx_client_gets_api_me_and_survives_a_revoked_session(world):
    auth = sessionkeeper.HTTPXAuth("demo", socket=world.socket)
    with httpx.Client(auth=auth) as client:
        first = client.get(world.url("/api/me"))
        assert first.status_code == 200 and first.json()["user"]["name"] == "alice"
        agent = sessionkeeper.site("demo", socket=world.socket).user_agent
        assert agent and first.request.headers["User-Agent"] == agent
        logins = world.stats()["logins"]
        world.revoke_all()
        again = client.get(world.url("/api/me"))
        assert again.status_code == 200
        assert world.stats()["logins"] == logins + 1


def test_httpx_async_client_gets_api_me_and_survives_a_revoked_session(world):
    auth = sessionkeeper.HTTPXAuth("demo", socket=world.socket)

    async def scenario():
        async with httpx.AsyncClient(auth=auth) as client:
            first = await client.get(world.url("/api/me"))
            assert first.status_code == 200
            logins = world.stats()["logins"]
            world.revoke_all()
            answers = await asyncio.gather(*(client.get(world.url("/api/me")) for _ in range(5)))
            assert [a.status_code for a in answers] == [200] * 5
            assert world.stats()["logins"] == logins + 1, "five requests that met a dead session: one login"

    asyncio.run(scenario())


def test_httpx_hands_back_a_rotating_cookie(world):
    auth = sessionkeeper.HTTPXAuth("demo", socket=world.socket)
    logins = world.stats()["logins"]
    with httpx.Client(auth=auth) as client:
        for _ in range(3):
            assert client.get(world.url("/api/rotate")).status_code == 200
        assert client.get(world.url("/api/me")).status_code == 200
    assert world.stats()["logins"] == logins
