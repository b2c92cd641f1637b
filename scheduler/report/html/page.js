(function(){
const errors=document.getElementById('errors');
window.addEventListener('error',e=>{errors.textContent+='script error: '+e.message+'\n';});
const card=JSON.parse(document.getElementById('card').textContent);
const NS='http://www.w3.org/2000/svg';
function el(name,attrs,parent,txt){const e=document.createElementNS(NS,name);
 for(const k in attrs)e.setAttribute(k,attrs[k]);if(txt!==undefined)e.textContent=txt;
 if(parent)parent.appendChild(e);return e;}
function svg(id,w,h){const s=el('svg',{width:w,height:h,viewBox:'0 0 '+w+' '+h});
 document.getElementById(id).appendChild(s);return s;}
function colour(rate){if(rate===null)return '#eee';const r=Math.round(207-(207-26)*rate),
 g=Math.round(34+(127-34)*rate),b=Math.round(46+(55-46)*rate);return 'rgb('+r+','+g+','+b+')';}
let drawn=0;
// Heatmap: configurations down, tools across.
const tools=[...new Set(card.rows.filter(r=>r.dimension==='tool').map(r=>r.key))].sort();
const configs=card.rows.filter(r=>r.dimension==='config').map(r=>r.model+' / '+r.prompt);
if(tools.length&&configs.length){
 const cw=Math.max(34,Math.min(70,900/tools.length)),left=190,top=110;
 const s=svg('heatmap',left+cw*tools.length+10,top+26*configs.length+10);
 tools.forEach((t,i)=>{el('text',{x:left+i*cw+cw/2,y:top-6,
  transform:'rotate(-40 '+(left+i*cw+cw/2)+' '+(top-6)+')'},s,t);});
 configs.forEach((c,j)=>{el('text',{x:4,y:top+j*26+17},s,c);
  tools.forEach((t,i)=>{const row=card.rows.find(r=>r.dimension==='tool'&&r.key===t&&
   r.model+' / '+r.prompt===c);const rate=row?row.rate:null;
   const rect=el('rect',{x:left+i*cw,y:top+j*26,width:cw-2,height:24,fill:colour(rate)},s);
   el('title',{},rect,t+': '+(row?row.passes+'/'+row.n:'not tested'));
   el('text',{x:left+i*cw+cw/2-12,y:top+j*26+16,fill:'#fff'},s,
    rate===null?'':Math.round(rate*100)+'%');});});
 drawn++;}
// Latency distributions: one bar chart per configuration over the shared bins.
const bins=card.latency_bins;
card.extras.forEach(x=>{const total=x.histogram.reduce((a,b)=>a+b,0);if(!total)return;
 const w=26,s=svg('latency',60+w*x.histogram.length,150);const max=Math.max(...x.histogram);
 el('text',{x:4,y:12},s,x.model+' / '+x.prompt+' ('+total+' trials)');
 x.histogram.forEach((n,i)=>{const h=100*n/max;
  const bar=el('rect',{x:40+i*w,y:120-h,width:w-3,height:h,fill:'#0969da'},s);
  el('title',{},bar,n+' trials '+(i<bins.length?'≤ '+bins[i]+' s':'> '+bins[bins.length-1]+' s'));
  if(i%2===0)el('text',{x:40+i*w,y:136},s,i<bins.length?bins[i]+'s':'more');});
 drawn++;});
// Failure modes: one stacked bar per configuration.
const palette={pass:'#1a7f37',harness_error:'#cf222e',infra_error:'#8c959f',context_overflow:'#953800',timeout:'#bf8700',format_error:'#8250df',guessed:'#bc4c00',forbidden_call:'#82071e',
 no_tool_call:'#fb8f44',wrong_tool:'#cf222e',wrong_params:'#e16f24',wrong_sequence:'#a40e26',
 tool_loop:'#6e7781',wrong_state:'#bc4c00',output_mismatch:'#d4a72c'};
const cfgRows=card.rows.filter(r=>r.dimension==='config');
if(cfgRows.length){const s=svg('failures',980,40+30*cfgRows.length+20);
 cfgRows.forEach((r,j)=>{const total=Object.values(r.outcomes).reduce((a,b)=>a+b,0);let x=190;
  el('text',{x:4,y:36+j*30+16},s,r.model+' / '+r.prompt);
  Object.entries(r.outcomes).forEach(([o,n])=>{const w=760*n/Math.max(total,1);
   const bar=el('rect',{x:x,y:36+j*30,width:w,height:22,fill:palette[o]||'#444'},s);
   el('title',{},bar,o+': '+n);x+=w;});});
 let lx=190,ly=6;Object.keys(palette).forEach(o=>{const w=o.length*6.3+24;
  if(lx+w>975){lx=190;ly+=14;}el('rect',{x:lx,y:ly,width:10,height:10,fill:palette[o]},s);
  el('text',{x:lx+13,y:ly+9},s,o);lx+=w;});
 drawn++;}
document.body.dataset.charts=drawn;
})();
