/* SPDX-License-Identifier: GPL-2.0 */
/* The name (comm) of a command uscope forks for -c, from its fork until its exec replaces the name
 * with the command's own (begin_new_exec): how BPF programs tell uscope's code in the child from
 * the command's (target_filter.h). Shared by BPF and user space; 15 characters at most. */
#pragma once

#define USCOPE_PRE_EXEC_COMM "uscope:pre-exec"
