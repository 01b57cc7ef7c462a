"""`zfsperf fleet run`: one runfile on many hosts through Ansible (issue 74, 1): `engine.py` drives
ansible-playbook with the playbook shipped here and reads back what each host did (the callback in
callback/); `run.py` is the command: checks every host before any runs, runs, collects each host's
results directory and writes the fleet's own record (fleet.json), which `fleet compare` reads."""
