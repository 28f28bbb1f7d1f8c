"""Measuring many setups unattended: the runner starts and stops each server (server_process.py,
server_log.py), reads a sweep file (sweep_file.py) and runs its setups here (sweep.py) or as
Slurm jobs (slurm.py)."""
