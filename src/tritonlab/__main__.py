from tritonlab.cli import main

main()
