/*
 * RISC5 TCG helpers.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
DEF_HELPER_FLAGS_4(fad, TCG_CALL_NO_RWG_SE, i32, i32, i32, i32, i32)
DEF_HELPER_FLAGS_2(fml, TCG_CALL_NO_RWG_SE, i32, i32, i32)
DEF_HELPER_FLAGS_2(fdv, TCG_CALL_NO_RWG_SE, i32, i32, i32)
/* DIV writes H (a TCG global), so it must not carry a NO_RWG/NO_WG flag. */
DEF_HELPER_4(div, i32, env, i32, i32, i32)
DEF_HELPER_2(trace, void, env, i32)
DEF_HELPER_2(void_fetch, noreturn, env, i32)
