/*
 * mpiscope_plugin.h: the interface of mpiscope recorder plugins.
 *
 * A plugin is a shared object named by `mpiscope trace --plugin SO` (or the
 * MPISCOPE_PLUGIN environment variable). The recorder dlopen()s it when the
 * preload library is loaded and looks up the two callbacks below; a plugin may
 * export either or both.
 *
 * The callbacks run inside the MPI wrapper, on the thread that made the MPI
 * call, for every call that is recorded (calls left out by sampling, filters,
 * MPI_Pcontrol(0) or the time window do not reach the plugin). Recording of the
 * thread is suspended while they run: MPI calls made from a callback are not
 * traced. They must be quick and must not throw or longjmp out.
 *
 * Build: cc -shared -fPIC -I<mpiscope>/include -o myplugin.so myplugin.c
 */
#ifndef MPISCOPE_PLUGIN_H
#define MPISCOPE_PLUGIN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of struct mpiscope_call; check it before reading other fields. */
#define MPISCOPE_PLUGIN_ABI_VERSION 1

/* What a callback is told about a call. Valid only during the callback. */
struct mpiscope_call {
    /* MPISCOPE_PLUGIN_ABI_VERSION of the recorder. */
    uint32_t abi_version;
    /* Call id, as in the trace (Fortran bindings have their own ids). */
    uint32_t call_id;
    /* C name of the function ("MPI_Send"), NUL-terminated, whatever binding
       was called. */
    const char *name;
    /* 1 when the call was made through a Fortran binding, else 0. */
    int fortran;
    /* World rank of the process (-1 before MPI_Init has completed). */
    int rank;
    /* Clock ticks at entry of the real MPI function (0 in the pre callback). */
    uint64_t t_enter;
    /* Clock ticks at exit of the real MPI function (0 in the pre callback). */
    uint64_t t_exit;
};

/* Called before the real MPI function. */
void mpiscope_plugin_pre(const struct mpiscope_call *call);

/* Called after the real MPI function, before the event is written. Return
   non-zero to store *user_value in the event's `user` slot (shown as
   `user=` by `mpiscope dump`); return 0 to leave the event unchanged. */
int mpiscope_plugin_post(const struct mpiscope_call *call, int64_t *user_value);

#ifdef __cplusplus
}
#endif

#endif /* MPISCOPE_PLUGIN_H */
