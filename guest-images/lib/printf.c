/* SPDX-License-Identifier: MIT */
/*
 * printf family. Formatting writes into a sink: a caller's buffer
 * (snprintf) or this CPU's line buffer, which is the text[] of its ucall
 * block and goes out as one PRINT ucall per line (one VM exit per line).
 */
#include "rt_internal.h"

struct sink {
	char *buf; /* snprintf: destination, size bytes */
	size_t size;
	size_t len;	    /* characters produced so far */
	struct rt_cpu *cpu; /* printf: line buffer of this CPU */
};

#define LINE_MAX (sizeof(((struct pv_ucall *)0)->text) - 1)

void rt_line_flush(struct rt_cpu *c)
{
	if (!c->line_len)
		return;
	c->ucall.text[c->line_len] = '\0';
	c->line_len = 0;
	ucall_send(c, PV_UCALL_PRINT);
}

void printf_flush(void)
{
	rt_line_flush(rt_this_cpu());
}

static void emit(struct sink *s, char ch)
{
	s->len++;
	if (s->cpu) {
		struct rt_cpu *c = s->cpu;

		c->ucall.text[c->line_len++] = ch;
		if (ch == '\n' || c->line_len == LINE_MAX)
			rt_line_flush(c);
	} else if (s->len < s->size) {
		s->buf[s->len - 1] = ch;
	}
}

static void pad(struct sink *s, char ch, int n)
{
	while (n-- > 0)
		emit(s, ch);
}

struct spec {
	int width;
	int prec; /* -1: none */
	bool left, zero, upper;
};

static void emit_num(struct sink *s, uint64_t v, unsigned base, bool neg, const struct spec *sp)
{
	const char *digits = sp->upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char tmp[24];
	int n = 0, len;

	do {
		tmp[n++] = digits[v % base];
		v /= base;
	} while (v);
	len = n + neg;
	if (!sp->left && !sp->zero)
		pad(s, ' ', sp->width - len);
	if (neg)
		emit(s, '-');
	if (!sp->left && sp->zero)
		pad(s, '0', sp->width - len);
	while (n)
		emit(s, tmp[--n]);
	if (sp->left)
		pad(s, ' ', sp->width - len);
}

static void emit_str(struct sink *s, const char *str, const struct spec *sp)
{
	int n;

	if (!str)
		str = "(null)";
	n = (int)strnlen(str, sp->prec >= 0 ? (size_t)sp->prec : (size_t)-1);
	if (!sp->left)
		pad(s, ' ', sp->width - n);
	for (int i = 0; i < n; i++)
		emit(s, str[i]);
	if (sp->left)
		pad(s, ' ', sp->width - n);
}

static const char *parse_spec(const char *f, struct spec *sp, va_list *ap)
{
	*sp = (struct spec){ .prec = -1 };
	for (;; f++) {
		if (*f == '-')
			sp->left = true;
		else if (*f == '0')
			sp->zero = true;
		else
			break;
	}
	if (*f == '*') {
		sp->width = va_arg(*ap, int);
		f++;
	}
	while (*f >= '0' && *f <= '9')
		sp->width = sp->width * 10 + (*f++ - '0');
	if (*f == '.') {
		f++;
		sp->prec = 0;
		if (*f == '*') {
			sp->prec = va_arg(*ap, int);
			f++;
		}
		while (*f >= '0' && *f <= '9')
			sp->prec = sp->prec * 10 + (*f++ - '0');
	}
	return f;
}

static void format(struct sink *s, const char *f, va_list ap)
{
	va_list args;

	va_copy(args, ap);
	for (; *f; f++) {
		struct spec sp;
		int lng = 0; /* -2 hh, -1 h, 0 int, 1 long, 2 long long */
		uint64_t u;
		int64_t d;

		if (*f != '%') {
			emit(s, *f);
			continue;
		}
		f = parse_spec(f + 1, &sp, &args);
		for (;; f++) {
			if (*f == 'l')
				lng++;
			else if (*f == 'h')
				lng--;
			else if (*f == 'z' || *f == 'j' || *f == 't')
				lng = 1;
			else
				break;
		}
		switch (*f) {
		case 'd':
		case 'i':
			d = lng > 0 ? va_arg(args, int64_t) : va_arg(args, int);
			if (lng == -1)
				d = (short)d;
			else if (lng == -2)
				d = (signed char)d;
			emit_num(s, d < 0 ? -(uint64_t)d : (uint64_t)d, 10, d < 0, &sp);
			break;
		case 'u':
		case 'x':
		case 'X':
			u = lng > 0 ? va_arg(args, uint64_t) : va_arg(args, unsigned int);
			if (lng == -1)
				u = (unsigned short)u;
			else if (lng == -2)
				u = (unsigned char)u;
			sp.upper = *f == 'X';
			emit_num(s, u, *f == 'u' ? 10 : 16, false, &sp);
			break;
		case 'p':
			emit(s, '0');
			emit(s, 'x');
			sp.width = sp.width > 2 ? sp.width - 2 : 0;
			emit_num(s, (uintptr_t)va_arg(args, void *), 16, false, &sp);
			break;
		case 's':
			emit_str(s, va_arg(args, const char *), &sp);
			break;
		case 'c':
			pad(s, ' ', sp.left ? 0 : sp.width - 1);
			emit(s, (char)va_arg(args, int));
			pad(s, ' ', sp.left ? sp.width - 1 : 0);
			break;
		case '%':
			emit(s, '%');
			break;
		case '\0':
			f--; /* a lone '%' at the end */
			break;
		default: /* unknown conversion: print it as is */
			emit(s, '%');
			emit(s, *f);
			break;
		}
	}
	va_end(args);
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct sink s = { .buf = buf, .size = size };

	format(&s, fmt, ap);
	if (size)
		buf[s.len < size ? s.len : size - 1] = '\0';
	return (int)s.len;
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

int vprintf(const char *fmt, va_list ap)
{
	struct sink s = { .cpu = rt_this_cpu() };

	format(&s, fmt, ap);
	return (int)s.len;
}

int printf(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vprintf(fmt, ap);
	va_end(ap);
	return n;
}
