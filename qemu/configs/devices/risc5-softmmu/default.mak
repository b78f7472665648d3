# The Project Oberon board
CONFIG_OBERON=y
