#!/usr/bin/env python3
"""Runs a real Django admin (a third-party web application, installed from PyPI by the test) on 127.0.0.1.

Usage: PYTHONPATH=<folder with django> DJANGO_ADMIN_PASSWORD=... django_admin_site.py WORKDIR

Creates a project in WORKDIR (`django-admin startproject`), migrates a SQLite database there, creates
the superuser `admin` with the password from DJANGO_ADMIN_PASSWORD, picks a free port, prints it on its
first line, then serves with `manage.py runserver 127.0.0.1:PORT --noreload` until SIGTERM.
"""
import os
import signal
import socket
import subprocess
import sys


def stop_on_signals():
    # A test runner may start us with SIGTERM blocked: unblock it so the test can stop us.
    signals = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
    signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
    for number in signals:
        signal.signal(number, lambda *_: sys.exit(0))


def run(*arguments, cwd):
    subprocess.run([sys.executable, *arguments], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=sys.stderr)


def main():
    stop_on_signals()
    workdir = sys.argv[1]
    project = os.path.join(workdir, "project")
    os.makedirs(project, exist_ok=True)
    run("-m", "django", "startproject", "adminsite", project, cwd=workdir)
    run("manage.py", "migrate", "--noinput", cwd=project)
    run("manage.py", "shell", "-c",
        "import os\n"
        "from django.contrib.auth.models import User\n"
        "User.objects.create_superuser('admin', 'admin@example.com', os.environ['DJANGO_ADMIN_PASSWORD'])",
        cwd=project)

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    print(port, flush=True)

    server = subprocess.Popen([sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
                              cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        server.wait()
    finally:
        server.terminate()
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    main()
