from memory_platform.cli import main

main()
