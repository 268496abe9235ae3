from tritonlab.cli.app import main

main()
