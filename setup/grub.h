/* SPDX-License-Identifier: GPL-2.0-or-later */
/* dmemfs-host-setup grub: the dmem= of the package's grub snippet. */
#ifndef DMEMFS_HOST_SETUP_GRUB_H
#define DMEMFS_HOST_SETUP_GRUB_H

#include <glib.h>

#define SETUP_GRUB_FILE "/etc/default/grub.d/dmemfs-host.cfg"

/* one dmem= value the kernel takes, or "" (nothing reserved) */
gboolean setup_grub_value_ok(const char *value, GError **error);
/* dmem-capacity --recommend's value for @guests (shapes), @reserve or NULL */
char *setup_grub_recommend(char *const *guests, const char *reserve, GError **error);
/* set the one DMEM="..." line of @file to @value, atomically */
gboolean setup_grub_write(const char *file, const char *value, GError **error);

#endif
