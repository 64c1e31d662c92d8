#!/usr/bin/env python3
"""Starts a program, sends it SIGTERM as soon as it prints a line containing MARK, and exits with
its exit code (128 + 15 for a program that stops on SIGTERM as dl-train does). No timing: the
signal follows the line.

    run_and_stop.py MARK PROGRAM [ARG...]
"""
import signal
import subprocess
import sys

mark, argv = sys.argv[1], sys.argv[2:]
p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
sent = False
for line in p.stdout:
    sys.stdout.write(line)
    if not sent and mark in line:
        p.send_signal(signal.SIGTERM)
        sent = True
code = p.wait()
if not sent:
    sys.exit("run_and_stop.py: %r never printed %r" % (argv[0], mark))
sys.exit(128 - code if code < 0 else code)
