#!/usr/bin/python3
# Test plugin built on the shipped helper (plugins/lib/sessionkeeper_plugin.py); with.mode picks what it does.
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ written into the plugins folder
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "..", "plugins", "lib"))
import sessionkeeper_plugin as sk  # noqa: E402


def main(request):
    mode = request.option("mode", required=True, kind=str)
    password = request.credentials.get("password", "")
    token = request.option("token", "")
    if mode == "answer":
        request.log(f"logging in at {request.option('url')} as {request.credential('username')} with {password} and {token}")
        return sk.answer(
            vars={"site": request.site, "timeout": str(request.duration("timeout", 30))},
            cookies=[sk.cookie("helper_session", "helper-session-value", ".app.example.com", expires=4102444800, http_only=True, same_site="Lax")],
            headers={"X-Helper": "on"})
    if mode == "fail":
        sk.fail(f"the site refused {password}")
    if mode == "crash":
        raise ValueError(f"cannot parse {token}")
    if mode == "bad-duration":
        request.duration("timeout", 30)
    return None


if __name__ == "__main__":
    sk.run(main, public_options=("mode", "url"))
