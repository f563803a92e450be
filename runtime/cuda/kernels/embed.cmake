# cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed.cmake
# Writes a C array `NAME` holding the bytes of IN, and `NAME_size` (the
# fused attention's fatbin, loaded by runtime/cuda/CudaSession.cpp).
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" digits)
math(EXPR bytes "${digits} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
file(WRITE "${OUT}" "#include <stddef.h>\n"
     "const unsigned char ${NAME}[] __attribute__((aligned(64))) = {${body}};\n"
     "const size_t ${NAME}_size = ${bytes};\n")
