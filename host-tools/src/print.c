/* SPDX-License-Identifier: MIT */
/* hvtrace: a record as `dump` prints it (text or JSON), and JSON strings;
 * apart from main() so that the fuzzers link the report code with them. */
#include "cli.h"

void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static const char *addr_str(const struct hvt_syms *syms, uint64_t a, char *buf, size_t len)
{
	if (syms)
		return hvt_syms_format(syms, a, buf, len);
	snprintf(buf, len, "0x%llx", (unsigned long long)a);
	return buf;
}

void print_rec_text(FILE *out, const struct hvtrace_rec *r, const struct hvt_syms *syms)
{
	char from[160], to[160];
	const struct hvt_syms *s = r->kind == HVTRACE_REC_CR3 ? NULL : syms;

	fprintf(out, "%llu %u %s ", (unsigned long long)r->tsc, r->vcpu, hvt_kind_name(r->kind));
	switch (r->kind) {
	case HVTRACE_REC_MARKER:
		/* start, crash and trigger markers carry an address: where it
		 * began, broke, or reached a trace.freeze address */
		if (r->aux == HVTRACE_MARK_START)
			/* and the address space it began in (the trigger's
			 * process: the trace cut by CR3, docs/pmu.md) */
			fprintf(out, "%s %s cr3 0x%llx\n", hvt_marker_name(r->aux),
				addr_str(s, r->from, from, sizeof(from)), (unsigned long long)r->to);
		else if (r->aux == HVTRACE_MARK_GAP)
			/* LBR batching lost records here and cannot say how many */
			fprintf(out, "%s (records lost before this point, how many is not known)\n",
				hvt_marker_name(r->aux));
		else if (r->aux == HVTRACE_MARK_CRASH || r->aux == HVTRACE_MARK_TRIGGER)
			fprintf(out, "%s %s\n", hvt_marker_name(r->aux), addr_str(s, r->from, from, sizeof(from)));
		else
			fprintf(out, "%s 0x%llx\n", hvt_marker_name(r->aux), (unsigned long long)r->from);
		return;
	case HVTRACE_REC_LOST:
		fprintf(out, "%llu records (first at tsc %llu)\n", (unsigned long long)r->from,
			(unsigned long long)r->to);
		return;
	}
	fprintf(out, "%s -> %s cpl %u->%u", addr_str(s, r->from, from, sizeof(from)),
		addr_str(s, r->to, to, sizeof(to)), HVTRACE_INFO_FROM_CPL(r->info),
		HVTRACE_INFO_TO_CPL(r->info));
	switch (r->kind) {
	case HVTRACE_REC_BRANCH:
	case HVTRACE_REC_FAR:
		fprintf(out, " %s\n", hvt_branch_type_name(r->aux));
		break;
	case HVTRACE_REC_INTERRUPT:
		fprintf(out, " vector 0x%x%s\n", HVTRACE_AUX_VECTOR(r->aux),
			r->aux & HVTRACE_AUX_NMI ? " nmi" : "");
		break;
	case HVTRACE_REC_EXCEPTION:
		fprintf(out, " vector %u%s\n", HVTRACE_AUX_VECTOR(r->aux),
			r->aux & HVTRACE_AUX_SOFT ? " soft" : "");
		break;
	default:
		fputc('\n', out);
	}
}

void print_rec_json(FILE *out, const struct hvtrace_rec *r, const struct hvt_syms *syms)
{
	char buf[160];

	fprintf(out, "{\"tsc\":%llu,\"vcpu\":%u,\"kind\":\"%s\"", (unsigned long long)r->tsc, r->vcpu,
		hvt_kind_name(r->kind));
	switch (r->kind) {
	case HVTRACE_REC_MARKER:
		fprintf(out, ",\"marker\":\"%s\",\"value\":\"0x%llx\"", hvt_marker_name(r->aux),
			(unsigned long long)r->from);
		if (r->aux == HVTRACE_MARK_START)
			fprintf(out, ",\"cr3\":\"0x%llx\"", (unsigned long long)r->to);
		fputs("}\n", out);
		return;
	case HVTRACE_REC_LOST:
		fprintf(out, ",\"count\":%llu,\"first_tsc\":%llu}\n", (unsigned long long)r->from,
			(unsigned long long)r->to);
		return;
	case HVTRACE_REC_BRANCH:
	case HVTRACE_REC_FAR:
		fprintf(out, ",\"type\":\"%s\"", hvt_branch_type_name(r->aux));
		break;
	case HVTRACE_REC_INTERRUPT:
		fprintf(out, ",\"vector\":%u,\"nmi\":%s", HVTRACE_AUX_VECTOR(r->aux),
			r->aux & HVTRACE_AUX_NMI ? "true" : "false");
		break;
	case HVTRACE_REC_EXCEPTION:
		fprintf(out, ",\"vector\":%u,\"soft\":%s", HVTRACE_AUX_VECTOR(r->aux),
			r->aux & HVTRACE_AUX_SOFT ? "true" : "false");
		break;
	}
	fprintf(out, ",\"from\":\"0x%llx\",\"to\":\"0x%llx\",\"from_cpl\":%u,\"to_cpl\":%u,\"aux\":%u",
		(unsigned long long)r->from, (unsigned long long)r->to, HVTRACE_INFO_FROM_CPL(r->info),
		HVTRACE_INFO_TO_CPL(r->info), r->aux);
	if (syms && r->kind != HVTRACE_REC_CR3) {
		fputs(",\"from_sym\":", out);
		json_str(out, hvt_syms_format(syms, r->from, buf, sizeof(buf)));
		fputs(",\"to_sym\":", out);
		json_str(out, hvt_syms_format(syms, r->to, buf, sizeof(buf)));
	}
	fputs("}\n", out);
}
