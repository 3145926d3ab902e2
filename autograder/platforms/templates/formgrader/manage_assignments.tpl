{#- formgrader's assignments page: outside `make hub` there is no nbgrader exchange, and that is how the course
    runs; the course says how chapters travel instead of formgrader's warning about a missing folder. -#}
{%- extends "nbgrader/manage_assignments.tpl" -%}
{%- block messages -%}
{{ super() }}
{%- if exchange_missing %}
<style>#warning-exchange { display: none; }</style>
<div class="alert alert-info" id="course-exchange" role="note">
  This server has no nbgrader exchange (<code>{{ exchange | e }}</code>), as the course runs everywhere but
  under <code>make hub</code>: the Release and Collect buttons do nothing here. Students get a chapter from
  <code>make release</code> through <code>make bundle</code> or the LMS, and hand it back there; an LMS's
  download is filed under submitted/ with <code>make zip-collect CH=&lt;chapter&gt;</code>. The Generate button
  runs the course's release.
</div>
{%- endif %}
{%- endblock -%}
