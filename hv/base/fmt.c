/* printf-style formatting, freestanding: shared by the hypervisor's log,
 * the loader's messages and the config parser. */
#include <stdarg.h>
#include "base/lib.h"

struct out {
	char *buf;
	size_t size, len;
};

static void out_c(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void out_num(struct out *o, u64 v, unsigned base, int width, bool zero, bool neg,
		    bool left)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (neg)
		width--;
	if (left)
		zero = false;
	if (neg && zero)
		out_c(o, '-');
	for (; !left && width > n; width--)
		out_c(o, zero ? '0' : ' ');
	if (neg && !zero)
		out_c(o, '-');
	for (int k = n; k; k--)
		out_c(o, tmp[k - 1]);
	for (; left && width > n; width--)
		out_c(o, ' ');
}

/* Supports %[-][0][width][.prec][l|ll|z]{d,u,x,p,s,c,%}: what the log needs
 * ('-' pads on the right). */
int hv_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = { buf, size, 0 };

	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			out_c(&o, *fmt);
			continue;
		}
		fmt++;
		bool zero = false, left = false;
		int width = 0, lng = 0;
		if (*fmt == '-') {
			left = true;
			fmt++;
		}
		if (*fmt == '0') {
			zero = true;
			fmt++;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		int prec = -1;
		if (*fmt == '.') {
			prec = 0;
			for (fmt++; *fmt >= '0' && *fmt <= '9'; fmt++)
				prec = prec * 10 + (*fmt - '0');
		}
		while (*fmt == 'l' || *fmt == 'z') {
			lng++;
			fmt++;
		}
		switch (*fmt) {
		case 'd': {
			s64 v = lng ? va_arg(ap, s64) : va_arg(ap, int);
			out_num(&o, v < 0 ? -(u64)v : (u64)v, 10, width, zero, v < 0, left);
			break;
		}
		case 'u':
			out_num(&o, lng ? va_arg(ap, u64) : va_arg(ap, unsigned), 10, width, zero, false, left);
			break;
		case 'x':
			out_num(&o, lng ? va_arg(ap, u64) : va_arg(ap, unsigned), 16, width, zero, false, left);
			break;
		case 'p':
			out_c(&o, '0');
			out_c(&o, 'x');
			out_num(&o, (u64)(uintptr_t)va_arg(ap, void *), 16, 0, false, false, false);
			break;
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			size_t l = 0;
			while (s[l] && (prec < 0 || l < (size_t)prec))
				l++;
			for (; !left && width > (int)l; width--)
				out_c(&o, ' ');
			for (size_t k = 0; k < l; k++)
				out_c(&o, s[k]);
			for (; left && width > (int)l; width--)
				out_c(&o, ' ');
			break;
		}
		case 'c':
			out_c(&o, (char)va_arg(ap, int));
			break;
		case '%':
			out_c(&o, '%');
			break;
		default:
			out_c(&o, '%');
			if (*fmt)
				out_c(&o, *fmt);
			else
				fmt--;
		}
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = 0;
	return (int)o.len;
}

int hv_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = hv_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}
