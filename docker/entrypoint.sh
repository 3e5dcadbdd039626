#!/bin/sh
# The image's entry point: arguments pass through as with the valkey image.
#   docker run trafikey-server                      -> the server, image defaults
#   docker run trafikey-server --appendonly yes     -> the server with that option
#   docker run trafikey-server /etc/trafikey.conf   -> the server with that file
#   docker run -it trafikey-server sh               -> that command instead
set -e

# first arg is `--some-option` or `something.conf`: run the server with them
if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
	set -- trafikey-server "$@"
fi

if [ "$1" = 'trafikey-server' ]; then
	shift
	if [ "${1%.conf}" != "$1" ]; then
		# a config file states its own bind; options after it still win
		conf="$1"
		shift
		set -- trafikey-server "$conf" "$@"
	else
		# Listen on every interface of the container; protected mode keeps a
		# server without a password answering loopback clients only.
		# Later options win, so `--bind` or `--protected-mode` can change this.
		set -- trafikey-server --bind 0.0.0.0 --protected-mode yes "$@"
	fi
	# allow the container to be started with `--user`; as root, hand the data
	# directory to the server's user and run as that user
	if [ "$(id -u)" = '0' ] && id -u trafikey >/dev/null 2>&1; then
		find . \! -user trafikey -exec chown trafikey '{}' +
		# shellcheck disable=SC2086  # extra flags are words on purpose
		exec setpriv --reuid=trafikey --regid=trafikey --clear-groups -- "$@" $TRAFIKEY_EXTRA_FLAGS
	fi
fi

# files the server writes are its own unless a umask was chosen
um="$(umask)"
if [ "$um" = '0022' ]; then
	umask 0077
fi

# shellcheck disable=SC2086  # extra flags are words on purpose
exec "$@" $TRAFIKEY_EXTRA_FLAGS
