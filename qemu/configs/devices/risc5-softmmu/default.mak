# The Project Oberon board
CONFIG_OBERON=y
# -device loader: put a program or data into RAM (the FPU conformance test loads its vectors so)
CONFIG_GENERIC_LOADER=y
