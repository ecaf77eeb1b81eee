from compactd.cli import run

run()
