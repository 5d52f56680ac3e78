/* Test plugin for the recorder (see include/mpiscope_plugin.h).
 *
 * Counts the MPI_Send calls of the process in the PRE callback and stores the running
 * count in the `user` slot of each MPI_Send event from the POST callback: a process's
 * recorded MPI_Send events carry 1, 2, 3, ... Any inconsistency in what the recorder
 * passes (ABI version, missing name, Fortran flag on a C call, times in PRE, exit before
 * entry in POST, POST without PRE) is reported as a negative user value instead.
 * Other calls are left unchanged. The plugin makes no MPI call.
 */
#include <stdint.h>
#include <string.h>

#include "mpiscope_plugin.h"

static int64_t sends;       /* MPI_Send calls seen by PRE */
static int64_t pending;     /* PRE seen, POST not yet */
static int64_t bad;         /* first inconsistency (negative) */

static int is_send(const struct mpiscope_call *c) {
    return c->name != 0 && strcmp(c->name, "MPI_Send") == 0;
}

void mpiscope_plugin_pre(const struct mpiscope_call *c) {
    if (c->abi_version != MPISCOPE_PLUGIN_ABI_VERSION) {
        bad = bad ? bad : -1;
        return;
    }
    if (c->name == 0)
        bad = bad ? bad : -2;
    if (!is_send(c))
        return;
    if (c->fortran != 0)
        bad = bad ? bad : -3;
    if (c->t_enter != 0 || c->t_exit != 0)
        bad = bad ? bad : -4;
    if (c->rank < 0)
        bad = bad ? bad : -5;
    sends++;
    pending++;
}

int mpiscope_plugin_post(const struct mpiscope_call *c, int64_t *user_value) {
    if (c->abi_version != MPISCOPE_PLUGIN_ABI_VERSION || !is_send(c))
        return 0;
    if (c->t_exit < c->t_enter || c->t_enter == 0)
        bad = bad ? bad : -6;
    if (pending != 1)
        bad = bad ? bad : -7;
    pending = 0;
    *user_value = bad ? bad : sends;
    return 1;
}
