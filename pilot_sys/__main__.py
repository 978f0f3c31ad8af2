from pilot_sys.cli import main

main()
