from dsstar_cli.cli import main

main()
