#!/usr/bin/env python
import gc
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuportal.settings")
    # Start-up makes some 160,000 objects that live as long as the process: the cyclic
    # collector is off while they are made, and they are frozen out of its reach once the
    # command is loaded; frozen again at exit, the interpreter's last collections over
    # everything are skipped (0.1 s and 0.25 s of every command: docs/performance.md,
    # "The collector at start-up and exit").
    gc.disable()
    from django.core.management import ManagementUtility

    class Utility(ManagementUtility):
        def fetch_command(self, subcommand):
            command = super().fetch_command(subcommand)    # after django.setup(), the command imported
            gc.freeze()
            gc.enable()
            return command

    try:
        Utility(sys.argv).execute()
    finally:
        gc.freeze()


if __name__ == "__main__":
    main()
